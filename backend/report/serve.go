package report

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
	rep "github.com/seckilledge/seckill/contract/report"
)

// Codes this package adds (docs/operator.md, "The fairness report").
const (
	// CodeNotPublished: the sale exists but its report is not published yet (it is built a
	// little after the end).
	CodeNotPublished = "not_published"
	// CodeNotEnded: POST /admin/sales/{id}/report before the sale's end.
	CodeNotEnded = "not_ended"
	// CodeNoReportKey: the backend has no signing key (SECKILL_REPORT_KEY).
	CodeNoReportKey = "no_report_key"
)

const cacheImmutable = "public, max-age=31536000, immutable"

// Mount adds the public reads to the order listener's mux: the signed report, its evidence and
// the key set.
func (p *Publisher) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /seckill/{sale}/report", p.HandleReport)
	mux.HandleFunc("GET /seckill/{sale}/report/evidence", p.HandleEvidence)
	mux.HandleFunc("GET /.well-known/seckill-report-keys", p.HandleKeys)
}

// Stored is a published report as the table holds it.
type Stored struct {
	Signed   rep.Signed
	Evidence []byte
}

// Load reads a sale's published report (ErrUnknown: no such sale; pgx.ErrNoRows: not
// published yet).
func (p *Publisher) Load(ctx context.Context, sale string, evidence bool) (*Stored, error) {
	var s Stored
	var body []byte
	q := `SELECT report, kid, signature, CASE WHEN $2 THEN evidence ELSE ''::bytea END FROM sale_reports WHERE sale_id = $1`
	err := p.Pool.QueryRow(ctx, q, sale, evidence).Scan(&body, &s.Signed.Signature.Kid, &s.Signed.Signature.Value, &s.Evidence)
	if errors.Is(err, pgx.ErrNoRows) {
		var exists bool
		if err := p.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sales WHERE id = $1)`, sale).Scan(&exists); err != nil {
			return nil, err
		}
		if !exists {
			return nil, ErrUnknown
		}
		return nil, pgx.ErrNoRows
	}
	if err != nil {
		return nil, err
	}
	s.Signed.Report = body
	s.Signed.Signature.Alg = "Ed25519"
	return &s, nil
}

func (p *Publisher) load(w http.ResponseWriter, r *http.Request, evidence bool) *Stored {
	sale := r.PathValue("sale")
	if !contract.ValidID(sale) {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "bad sale id")
		return nil
	}
	s, err := p.Load(r.Context(), sale, evidence)
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case errors.Is(err, ErrUnknown):
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no such sale")
	case errors.Is(err, pgx.ErrNoRows):
		httpapi.Refuse(w, http.StatusNotFound, CodeNotPublished, "the sale's fairness report is published a little after its end")
	case err != nil:
		httpapi.Unavailable(w)
	default:
		w.Header().Set("Cache-Control", cacheImmutable)
		return s
	}
	return nil
}

// HandleReport serves GET /seckill/{sale}/report: {"report", "signature"} (contract/report's
// Signed), immutable once published. With Accept: text/html it is the report's page (Page),
// unless the query asks ?format=json (the page's link to the signed document: a browser
// following a link asks for HTML).
func (p *Publisher) HandleReport(w http.ResponseWriter, r *http.Request) {
	s := p.load(w, r, false)
	if s == nil {
		return
	}
	if p.Page != nil && wantsHTML(r) && r.URL.Query().Get("format") != "json" {
		p.Page(w, r, s.Signed)
		return
	}
	w.Header().Set("Vary", "Accept")
	httpapi.WriteJSON(w, http.StatusOK, s.Signed)
}

// HandleEvidence serves GET /seckill/{sale}/report/evidence: the evidence the report was
// computed from, as stored (text/plain, its SHA-256 is the report's evidence.sha256).
func (p *Publisher) HandleEvidence(w http.ResponseWriter, r *http.Request) {
	s := p.load(w, r, true)
	if s == nil {
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(s.Evidence)))
	_, _ = w.Write(s.Evidence)
}

// Keys are every key that signed a report, newest first, and the backend's own when it has not
// signed yet.
func (p *Publisher) Keys(ctx context.Context) (rep.KeySet, error) {
	set := rep.KeySet{Keys: []rep.Key{}}
	rows, err := p.Pool.Query(ctx, `SELECT kid, public_key, demo FROM report_keys ORDER BY first_used DESC, kid`)
	if err != nil {
		return set, err
	}
	for rows.Next() {
		k := rep.Key{Alg: "Ed25519"}
		if err := rows.Scan(&k.Kid, &k.PublicKey, &k.Demo); err != nil {
			return set, err
		}
		set.Keys = append(set.Keys, k)
	}
	if err := rows.Err(); err != nil {
		return set, err
	}
	if own := p.PublicKey(); own != nil {
		for _, k := range set.Keys {
			if k.Kid == own.Kid {
				return set, nil
			}
		}
		set.Keys = append([]rep.Key{*own}, set.Keys...)
	}
	return set, nil
}

// PublicKey is the backend's signing key's public half as the key set lists it (nil: none).
func (p *Publisher) PublicKey() *rep.Key {
	if p.Key == nil {
		return nil
	}
	k := publicOf(p.Key)
	return &k
}

// HandleKeys serves GET /.well-known/seckill-report-keys.
func (p *Publisher) HandleKeys(w http.ResponseWriter, r *http.Request) {
	set, err := p.Keys(r.Context())
	if err != nil {
		httpapi.Unavailable(w)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	httpapi.WriteJSON(w, http.StatusOK, set)
}

// HandlePublish serves POST /admin/sales/{id}/report: publish the ended sale's report now
// (200 with the signed report; the same when it was published before).
func (p *Publisher) HandlePublish(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !contract.ValidID(id) {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "bad sale id")
		return
	}
	_, err := p.Publish(r.Context(), id)
	switch {
	case errors.Is(err, ErrUnknown):
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no such sale")
		return
	case errors.Is(err, ErrNotEnded):
		httpapi.Refuse(w, http.StatusConflict, CodeNotEnded, "the report is built once the sale has ended")
		return
	case errors.Is(err, ErrNoKey):
		httpapi.Refuse(w, http.StatusConflict, CodeNoReportKey, "the backend has no report signing key (SECKILL_REPORT_KEY)")
		return
	case errors.Is(err, ErrNoEvidence):
		httpapi.Refuse(w, http.StatusConflict, CodeNotPublished, err.Error())
		return
	case err != nil:
		if p.Log != nil {
			p.Log.Error("fairness report", "sale", id, "err", err)
		}
		httpapi.Unavailable(w)
		return
	}
	s, err := p.Load(r.Context(), id, false)
	if err != nil {
		httpapi.Unavailable(w)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, s.Signed)
}

func wantsHTML(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		for _, part := range strings.Split(a, ",") {
			media, _, _ := strings.Cut(part, ";")
			if strings.TrimSpace(media) == "text/html" {
				return true
			}
		}
	}
	return false
}

func publicOf(k *Key) rep.Key {
	pub := k.Private.Public().(ed25519.PublicKey)
	return rep.Key{Kid: rep.KidOf(pub), Alg: "Ed25519", PublicKey: base64.RawURLEncoding.EncodeToString(pub), Demo: k.Demo}
}
