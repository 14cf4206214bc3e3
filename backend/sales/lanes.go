package sales

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seckilledge/seckill/backend/internal/httpapi"
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/contract/admin"
	"github.com/seckilledge/seckill/internal/strictjson"
)

// Bounds of POST /admin/sales/{id}/invitations.
const (
	MaxInvitationsPerCall = 10_000
	MaxInvitationUses     = 1_000_000
)

// ErrNoInvitationLane refuses codes for a sale whose room has no invitation lane.
var ErrNoInvitationLane = errors.New("the sale's room has no lane of kind invitation")

// InvitationCodeHash is the codes hash's field of a code: hex SHA-256 of its text. Redis keeps
// only the hash, so a dump of it lets nobody in.
func InvitationCodeHash(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// newInvitationCode is 16 base32 characters (80 random bits), grouped 4-4-4-4 to be read aloud.
func newInvitationCode() (string, error) {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	s := base32.StdEncoding.EncodeToString(b)
	return s[0:4] + "-" + s[4:8] + "-" + s[8:12] + "-" + s[12:16], nil
}

// IssueInvitations makes count new codes for the sale's invitation lane, each good for uses
// entries, and writes their hashes into the room's codes hash (docs/room.md, "Lanes"). The
// codes live as long as the sale's keys (its end plus retention). A code is spent inside the
// entry's script (room_queue.lua), so its cap holds across every gateway.
func (s *Sales) IssueInvitations(ctx context.Context, sale string, req admin.InvitationRequest) (admin.Invitations, error) {
	var out admin.Invitations
	if req.Count < 1 || req.Count > MaxInvitationsPerCall || req.Uses < 1 || req.Uses > MaxInvitationUses {
		return out, fmt.Errorf("count must be 1 to %d and uses 1 to %d", MaxInvitationsPerCall, MaxInvitationUses)
	}
	var room []byte
	var ends time.Time
	err := s.Pool.QueryRow(ctx, `SELECT room, ends_at FROM sales WHERE id = $1`, sale).Scan(&room, &ends)
	if errors.Is(err, pgx.ErrNoRows) {
		return out, ErrUnknownSale
	}
	if err != nil {
		return out, err
	}
	var spec admin.RoomSpec
	if room != nil {
		if err := json.Unmarshal(room, &spec); err != nil {
			return out, fmt.Errorf("sale %s: stored room: %w", sale, err)
		}
	}
	for _, l := range spec.Lanes {
		if l.Kind == admin.LaneInvitation {
			out.Lane = l.Name
		}
	}
	if out.Lane == "" {
		return out, ErrNoInvitationLane
	}
	out.Uses = req.Uses
	fields := make([]any, 0, 2*req.Count)
	for range req.Count {
		c, err := newInvitationCode()
		if err != nil {
			return out, err
		}
		out.Codes = append(out.Codes, c)
		fields = append(fields, InvitationCodeHash(c), req.Uses)
	}
	until := ends.Add(s.RetentionOrDefault())
	pipe := s.Redis.TxPipeline()
	pipe.HSet(ctx, contract.RoomCodesKey(sale), fields...)
	pipe.PExpireAt(ctx, contract.RoomCodesKey(sale), until)
	if _, err := pipe.Exec(ctx); err != nil {
		return out, err
	}
	return out, nil
}

// HandleInvitations is POST /admin/sales/{id}/invitations.
func (s *Sales) HandleInvitations(w http.ResponseWriter, r *http.Request) {
	var req admin.InvitationRequest
	if err := strictjson.Decode(http.MaxBytesReader(w, r.Body, 1<<12), &req); err != nil {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "body must be JSON {count, uses}: "+err.Error())
		return
	}
	sale := r.PathValue("id")
	if !contract.ValidID(sale) {
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, "id must match ^[A-Za-z0-9_-]{1,64}$")
		return
	}
	out, err := s.IssueInvitations(r.Context(), sale, req)
	switch {
	case err == nil:
		s.Log.Info("invitation codes issued", "sale_id", sale, "lane", out.Lane, "count", len(out.Codes), "uses", out.Uses)
		httpapi.WriteJSON(w, http.StatusCreated, out)
	case errors.Is(err, ErrUnknownSale):
		httpapi.Refuse(w, http.StatusNotFound, contract.CodeUnknownSale, "no such sale")
	case errors.Is(err, ErrNoInvitationLane):
		httpapi.Refuse(w, http.StatusConflict, "no_invitation_lane", err.Error())
	case strings.HasPrefix(err.Error(), "count must"):
		httpapi.Refuse(w, http.StatusBadRequest, contract.CodeBadRequest, err.Error())
	default:
		s.Log.Warn("invitations failed", "sale_id", sale, "err", err)
		httpapi.Unavailable(w)
	}
}

// LaneCounts reads each lane's counters from the room hash (lane:<name>:<counter>): what the
// cockpit and GET /admin/sales/{id} show.
func LaneCounts(h map[string]string) map[string]map[string]int64 {
	var out map[string]map[string]int64
	for k, v := range h {
		rest, ok := strings.CutPrefix(k, "lane:")
		if !ok {
			continue
		}
		lane, counter, ok := strings.Cut(rest, ":")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			continue
		}
		if out == nil {
			out = map[string]map[string]int64{}
		}
		if out[lane] == nil {
			out[lane] = map[string]int64{}
		}
		out[lane][counter] = n
	}
	return out
}
