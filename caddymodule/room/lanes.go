package room

import (
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"regexp"
)

// HeaderInvitation carries an invitation code on entry (POST /queue); the JSON body
// {"invitation": "<code>"} does the same for a page that posts a form of its own.
const HeaderInvitation = "X-Seckill-Invitation"

var invitationCode = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)

// maxEntryBody bounds an entry's JSON body: it holds one code.
const maxEntryBody = 1 << 10

// invitationOf reads the entry's invitation code: the header, else a JSON body's
// "invitation" ("" for none). ok is false when either is there but malformed.
func invitationOf(r *http.Request) (code string, ok bool) {
	if v := r.Header.Get(HeaderInvitation); v != "" {
		return v, invitationCode.MatchString(v)
	}
	if r.Body == nil || r.ContentLength == 0 {
		return "", true
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return "", true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxEntryBody+1))
	if err != nil || len(b) > maxEntryBody {
		return "", false
	}
	if len(b) == 0 {
		return "", true
	}
	var body struct {
		Invitation string `json:"invitation"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return "", false
	}
	if body.Invitation == "" {
		return "", true
	}
	return body.Invitation, invitationCode.MatchString(body.Invitation)
}
