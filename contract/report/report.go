// Package report is a sale's fairness report (docs/operator.md, "The fairness report"): its
// shape, its canonical encoding, its Ed25519 signature, the evidence it is computed from and the
// computation itself. It is standard-library Go and imports nothing of ours, so the backend that
// builds a report and anyone who checks one (`seckill-bench verify-report`) share the arithmetic
// and nothing else: the checker recomputes every figure from the published evidence.
package report

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Version is the report format's version, in every report's "version". Version 2 adds the
// draw's part (mode "draw": Draw, Checks.Draw, the evidence's d: and w: lines); a version 1
// report is a version 2 report without it, so a checker of version 2 checks both (Supported).
const Version = 2

// Supported reports whether a checker of this package can check a report of version v: every
// version up to its own.
func Supported(v int) bool { return v >= 1 && v <= Version }

// Check results.
const (
	Pass          = "pass"
	Fail          = "fail"
	NotApplicable = "not_applicable"
)

// Report is the signed document. Every number is an integer (shares are per mille), so the
// canonical encoding has one spelling for each value. Lanes and Flagged are present only when
// the room's data has them.
type Report struct {
	Version  int      `json:"version"`
	Sale     string   `json:"sale"`
	Mode     string   `json:"mode"` // "room", "draw" or "plain" (a sale without either)
	BuiltAt  string   `json:"built_at"`
	Timeline Timeline `json:"timeline"`
	Figures  Figures  `json:"figures"`
	Checks   Checks   `json:"checks"`
	// SpeedClasses: every entrant in exactly one class (Classes), in that order.
	SpeedClasses []SpeedClass `json:"speed_classes"`
	// Counters are the room's counters as Redis kept them (every integer field of the room's
	// hash that is not a setting), for the record; the figures come from the evidence.
	Counters map[string]int64 `json:"counters,omitempty"`
	Flagged  *Flagged         `json:"flagged,omitempty"`
	Lanes    map[string]Lane  `json:"lanes,omitempty"`
	// Draw is a draw sale's figures (mode "draw"), recomputed by the checker from the evidence.
	Draw     *Draw       `json:"draw,omitempty"`
	Evidence EvidenceRef `json:"evidence"`
	// DemoKey: signed with the demo's published key, so it proves nothing.
	DemoKey bool `json:"demo_key,omitempty"`
}

// Timeline holds the sale's moments, RFC 3339 UTC with milliseconds; "" when it did not happen.
type Timeline struct {
	PrequeueFrom   string `json:"prequeue_from,omitempty"`
	Starts         string `json:"starts"`
	FirstAdmission string `json:"first_admission,omitempty"`
	LastAdmission  string `json:"last_admission,omitempty"`
	FirstOrder     string `json:"first_order,omitempty"`
	SoldOut        string `json:"sold_out,omitempty"`
	Ends           string `json:"ends"`
	// DrawCloses is a draw's closes_at: its entries are fixed then, and its beacon round is the
	// first one published after it.
	DrawCloses string `json:"draw_closes,omitempty"`
}

// Figures are the sale's counts, each recomputed by the checker from the evidence.
type Figures struct {
	Units     int64 `json:"units"`      // the sale's stock at its start
	Entrants  int64 `json:"entrants"`   // distinct entry ids that held a place
	PreQueued int64 `json:"pre_queued"` // places of the pre-queue (the published list)
	Arrivals  int64 `json:"arrivals"`   // places taken after the start
	Admitted  int64 `json:"admitted"`   // admissions
	Passed    int64 `json:"passed"`     // places passed while their waiter was absent
	NoShows   int64 `json:"no_shows"`   // admissions judged with no token taken in time
	Left      int64 `json:"left"`       // waiting places given up
	Banned    int64 `json:"banned"`     // admissions ended because the throttle banned the user
	Tokens    int64 `json:"tokens"`     // purchase tokens issued on a live admission
	Buyers    int64 `json:"buyers"`     // entry ids holding an order (created or paid)
	Bought    int64 `json:"bought"`     // units held by those orders
	// Refused counts the orders that did not hold, by their end ("cancelled:<reason>",
	// "failed:<reason>").
	Refused map[string]int64 `json:"refused"`
	// UnusedAdmissions: entry ids admitted that hold no order.
	UnusedAdmissions int64 `json:"unused_admissions"`
}

// Checks are the results of the report's own checks at build time; the checker redoes them.
type Checks struct {
	Permutation Result `json:"permutation"`
	Beacon      Result `json:"beacon"`
	// Draw is a draw sale's check (mode "draw"): the seed opens the commitment, the entries
	// open the published root, every wave's winners are the next best-ranked entries of their
	// variant.
	Draw *Result `json:"draw,omitempty"`
}

// Result is one check's outcome: Pass, Fail or NotApplicable, with what was checked.
type Result struct {
	Result string `json:"result"`
	Detail string `json:"detail"`
}

// SpeedClass is one class of entrants by how fast they acted on their admission (Classes).
type SpeedClass struct {
	Class    string `json:"class"`
	Entrants int64  `json:"entrants"`
	Buyers   int64  `json:"buyers"`
	Units    int64  `json:"units"`
	// SharePermille: the class's units per mille of every unit bought (floor).
	SharePermille int64 `json:"share_permille"`
	// WinPermille: the class's buyers per mille of its entrants (floor).
	WinPermille int64 `json:"win_permille"`
}

// Flagged is the room's flagged entries, when its data has them.
type Flagged struct {
	Count int64 `json:"count"`
}

// Lane is one lane's counters, when the room's data has lanes.
type Lane map[string]int64

// EvidenceRef binds the published evidence into the signed report.
type EvidenceRef struct {
	SHA256 string `json:"sha256"`
	Lines  int64  `json:"lines"`
	Bytes  int64  `json:"bytes"`
	// Seed and Commitment are the room's (the pre-queue's order is HMAC-SHA256(seed, entry
	// id)) or the draw's (its ranking's seed, with Beacon's round when it names one).
	Seed       string `json:"seed,omitempty"`
	Commitment string `json:"commitment,omitempty"`
	// EntriesRoot and ProofVersion are a draw's published Merkle root over its fixed entries
	// and the tree's format (docs/draw.md, "Checking a draw").
	EntriesRoot  string `json:"entries_root,omitempty"`
	ProofVersion int    `json:"proof_version,omitempty"`
	// Beacon is a draw's public beacon with its fetched round, as the draw's result publishes
	// it (absent: commit-reveal only).
	Beacon json.RawMessage `json:"beacon,omitempty"`
}

// Classes are the speed classes, by the time from an entrant's first admission to the first
// purchase token he took after it: the client's reaction to "your turn". A client polling as
// fast as answers come (a bot) notices its admission within milliseconds; the waiting page
// polls at the refresh_s the room asks (one second at the front) and takes the token then.
var Classes = []string{"under_250ms", "250ms_to_1s", "1s_to_5s", "5s_or_more", "no_token", "not_admitted"}

// ClassOf is the class of a reaction of ms milliseconds.
func ClassOf(ms int64) string {
	switch {
	case ms < 250:
		return Classes[0]
	case ms < 1000:
		return Classes[1]
	case ms < 5000:
		return Classes[2]
	default:
		return Classes[3]
	}
}

// Canonical is the canonical encoding of v: JSON with object keys sorted by their bytes, no
// insignificant whitespace, no HTML escaping, numbers as written (a report holds integers
// only). A report is signed over the canonical encoding of its "report" object, so a checker
// who parses and re-encodes it gets the signed bytes back.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := encodeCanonical(&buf, tree); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func encodeCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := encodeCanonical(buf, t[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case string:
		writeString(buf, t)
	case json.Number:
		if _, err := strconv.ParseInt(string(t), 10, 64); err != nil {
			return fmt.Errorf("report: %s is not an integer", t)
		}
		buf.WriteString(string(t))
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case nil:
		buf.WriteString("null")
	default:
		return fmt.Errorf("report: cannot encode %T", v)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	buf.Write(bytes.TrimSuffix(b.Bytes(), []byte{'\n'}))
}

// SignedPrefix is what a signature covers before the canonical report: the format's name, so a
// report's signature is never valid for anything else the key signs.
const SignedPrefix = "seckill-report-v1\n"

// Signed is the published document: the report and its signature.
type Signed struct {
	Report    json.RawMessage `json:"report"`
	Signature Signature       `json:"signature"`
}

// Signature is an Ed25519 signature over SignedPrefix || Canonical(report), by key Kid.
type Signature struct {
	Alg   string `json:"alg"` // "Ed25519"
	Kid   string `json:"kid"`
	Value string `json:"value"` // base64url, no padding
}

// Key is one public key of GET /.well-known/seckill-report-keys.
type Key struct {
	Kid       string `json:"kid"`
	Alg       string `json:"alg"`
	PublicKey string `json:"public_key"` // base64url, no padding, 32 bytes
	// Demo marks the demo's published default key: a report it signs proves nothing.
	Demo bool `json:"demo,omitempty"`
}

// KeySet is the body of GET /.well-known/seckill-report-keys: every key that ever signed a
// report of this backend, newest first.
type KeySet struct {
	Keys []Key `json:"keys"`
}

// KidOf is a public key's id: the first 8 bytes of its SHA-256, in hex.
func KidOf(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// Sign encodes r canonically and signs it with priv.
func Sign(r *Report, priv ed25519.PrivateKey) (Signed, error) {
	body, err := Canonical(r)
	if err != nil {
		return Signed{}, err
	}
	sig := ed25519.Sign(priv, append([]byte(SignedPrefix), body...))
	return Signed{Report: body, Signature: Signature{Alg: "Ed25519", Kid: KidOf(priv.Public().(ed25519.PublicKey)),
		Value: base64.RawURLEncoding.EncodeToString(sig)}}, nil
}

// VerifySignature checks s against the key of its kid in keys, and returns the report.
func VerifySignature(s Signed, keys KeySet) (*Report, error) {
	if s.Signature.Alg != "Ed25519" {
		return nil, fmt.Errorf("signature algorithm %q is not Ed25519", s.Signature.Alg)
	}
	var pub ed25519.PublicKey
	for _, k := range keys.Keys {
		if k.Kid == s.Signature.Kid {
			b, err := base64.RawURLEncoding.DecodeString(k.PublicKey)
			if err != nil || len(b) != ed25519.PublicKeySize {
				return nil, fmt.Errorf("published key %s is not a base64url Ed25519 key", k.Kid)
			}
			if KidOf(b) != k.Kid {
				return nil, fmt.Errorf("published key %s does not hash to its kid", k.Kid)
			}
			pub = b
		}
	}
	if pub == nil {
		return nil, fmt.Errorf("no published key has kid %q", s.Signature.Kid)
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(s.Report))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("the report is not JSON: %w", err)
	}
	var body bytes.Buffer
	if err := encodeCanonical(&body, tree); err != nil {
		return nil, err
	}
	sig, err := base64.RawURLEncoding.DecodeString(s.Signature.Value)
	if err != nil || !ed25519.Verify(pub, append([]byte(SignedPrefix), body.Bytes()...), sig) {
		return nil, errors.New("the signature does not verify against the published key")
	}
	var r Report
	if err := json.Unmarshal(s.Report, &r); err != nil {
		return nil, fmt.Errorf("the report: %w", err)
	}
	return &r, nil
}

// Digest is the evidence's reference: SHA-256 of its bytes, its lines and its size.
func Digest(evidence []byte) EvidenceRef {
	sum := sha256.Sum256(evidence)
	return EvidenceRef{SHA256: hex.EncodeToString(sum[:]), Lines: int64(bytes.Count(evidence, []byte{'\n'})), Bytes: int64(len(evidence))}
}

// FormatMS is a Unix millisecond time as the report writes it ("" for 0).
func FormatMS(ms int64) string {
	if ms == 0 {
		return ""
	}
	return timeOfMS(ms)
}

// Place is one place of the queue as the evidence lists it.
type Place struct {
	Seq   int64 // 0: the pre-queue; 1, 2, ...: arrivals after the start, in order
	Entry string
}

// firstWord cuts s at its first colon.
func firstWord(s string) (string, string, bool) { return strings.Cut(s, ":") }
