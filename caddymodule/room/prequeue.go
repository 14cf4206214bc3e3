package room

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/seckilledge/seckill/caddymodule/handler"
	"github.com/seckilledge/seckill/caddymodule/room/core"
	"github.com/seckilledge/seckill/contract"
)

// prequeueMaxAge is the caching lifetime of a page of the published pre-queue: the list never
// changes after the end.
const prequeueMaxAge = 24 * time.Hour

// PrequeueList is the body of GET /seckill/{sale}/room/prequeue: one page of the pre-queue's
// entry ids in admission order. Without parameters it is the first page, in the contract's
// shape {"seed","entries"}; Next, present when more entries follow, is the `after` of the next
// page.
type PrequeueList struct {
	Seed    string   `json:"seed"`
	Lane    string   `json:"lane,omitempty"`
	Entries []string `json:"entries"`
	Total   int64    `json:"total"`
	Next    string   `json:"next,omitempty"`
}

// prequeuePage reads `after` (entries to skip, default 0) and `limit` (1..core.PrequeuePageMax,
// default core.PrequeuePageMax); ok is false when either is malformed.
func prequeuePage(r *http.Request) (after, limit int64, ok bool) {
	q := r.URL.Query()
	after, limit = 0, core.PrequeuePageMax
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || len(v) > 12 {
			return 0, 0, false
		}
		after = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > core.PrequeuePageMax {
			return 0, 0, false
		}
		limit = n
	}
	return after, limit, true
}

func (h *Room) servePrequeue(ctx context.Context, w http.ResponseWriter, r *http.Request, sale string) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return h.Endpoints.MethodNotAllowed(w, "prequeue", "GET")
	}
	after, limit, ok := prequeuePage(r)
	if !ok {
		return h.Endpoints.Refuse(w, "prequeue", handler.Refusal{Status: http.StatusBadRequest, Code: handler.BadRequest.Code,
			Message: "after is a count of entries (>= 0), limit 1 to " + strconv.Itoa(core.PrequeuePageMax)})
	}
	c, ok, err := h.mem.Room(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "prequeue", err)
	}
	if !ok {
		return h.Endpoints.Refuse(w, "prequeue", noRoom)
	}
	list := PrequeueList{Seed: hex.EncodeToString(c.Room.Seed), Entries: []string{}}
	if lane := r.URL.Query().Get("lane"); lane != "" {
		// One lane's pre-queue (docs/room.md, "Lanes"): ranked by the same seed. The public
		// lane's is the room's own list; another lane's is read from its queue page by page.
		var l core.Lane
		for _, x := range c.Room.Lanes {
			if x.Name == lane {
				l = x
			}
		}
		if l.Name == "" {
			return h.Endpoints.Refuse(w, "prequeue", handler.Refusal{Status: http.StatusNotFound, Code: contract.CodeUnknownSale, Message: "the sale's room has no such lane"})
		}
		list.Lane = lane
		if l.Kind != core.LanePublic {
			return h.serveLanePrequeue(ctx, w, r, sale, c.Room.Ends, list, after, limit)
		}
	}
	if s := h.mem.ReadySnapshot(sale, c.Room.Commitment); s != nil {
		// Published already: the sale has ended (for good), nothing to ask Redis.
		list.Total = s.N()
		list.Entries = s.Page(after, limit)
	} else {
		p, err := h.mem.Store.Public(ctx, sale)
		if err != nil {
			return h.Endpoints.Unavailable(w, "prequeue", err)
		}
		if p.Now.Before(c.Room.Ends) {
			return h.Endpoints.Refuse(w, "prequeue", notEnded)
		}
		_, total, err := h.mem.Store.Prequeue(ctx, sale, 0, 0)
		if err != nil {
			return h.Endpoints.Unavailable(w, "prequeue", err)
		}
		s, kept, err := h.mem.Snapshot(ctx, sale, c.Room.Commitment, total)
		if err != nil {
			return h.Endpoints.Unavailable(w, "prequeue", err)
		}
		list.Total = total
		if kept {
			list.Total = s.N()
			list.Entries = s.Page(after, limit)
		} else if after < total {
			members, _, err := h.mem.Store.Prequeue(ctx, sale, after, min(limit, total-after))
			if err != nil {
				return h.Endpoints.Unavailable(w, "prequeue", err)
			}
			for _, m := range members {
				if id := core.EntryIDOfMember(m); id != "" {
					list.Entries = append(list.Entries, id)
				}
			}
		}
	}
	if end := after + int64(len(list.Entries)); end < list.Total {
		list.Next = strconv.FormatInt(end, 10)
	}
	return writePublished(&h.Endpoints, w, r, list)
}

func (h *Room) serveLanePrequeue(ctx context.Context, w http.ResponseWriter, r *http.Request, sale string, ends time.Time, list PrequeueList, after, limit int64) error {
	p, err := h.mem.Store.Public(ctx, sale)
	if err != nil {
		return h.Endpoints.Unavailable(w, "prequeue", err)
	}
	if p.Now.Before(ends) {
		return h.Endpoints.Refuse(w, "prequeue", notEnded)
	}
	ls, ok := h.mem.Store.(core.LaneStore)
	if !ok {
		return h.Endpoints.Unavailable(w, "prequeue", core.ErrNoLaneStore)
	}
	members, total, err := ls.LanePrequeue(ctx, sale, list.Lane, after, limit)
	if err != nil {
		return h.Endpoints.Unavailable(w, "prequeue", err)
	}
	list.Total = total
	for _, m := range members {
		if id := core.EntryIDOfMember(m); id != "" {
			list.Entries = append(list.Entries, id)
		}
	}
	if end := after + int64(len(list.Entries)); end < list.Total {
		list.Next = strconv.FormatInt(end, 10)
	}
	return writePublished(&h.Endpoints, w, r, list)
}

// writePublished answers a page of the published list: the same bytes for every request of
// it from now on, so shared caches keep it (public, max-age) and a client revalidates with
// If-None-Match for a 304.
func writePublished(ep *handler.Endpoints, w http.ResponseWriter, r *http.Request, list PrequeueList) error {
	b, err := json.Marshal(list)
	if err != nil {
		return ep.Unavailable(w, "prequeue", err)
	}
	sum := sha256.Sum256(b)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	hd := w.Header()
	hd.Set("ETag", etag)
	hd.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(prequeueMaxAge.Seconds()))+", immutable")
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		ep.Requests.WithLabelValues("prequeue", "not_modified").Inc()
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	ep.Requests.WithLabelValues("prequeue", "ok").Inc()
	hd.Set("Content-Type", "application/json")
	hd.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	_, err = w.Write(b)
	return err
}

// etagMatches implements If-None-Match's list (weak comparison, "*").
func etagMatches(header, etag string) bool {
	for header != "" {
		var tag string
		tag, header, _ = strings.Cut(header, ",")
		tag = strings.TrimSpace(tag)
		if tag == "*" || tag == etag || tag == "W/"+etag {
			return true
		}
	}
	return false
}
