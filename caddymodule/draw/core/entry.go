package core

import (
	"github.com/seckilledge/seckill/contract"
	"github.com/seckilledge/seckill/internal/strictjson"
)

// MaxEntryBody bounds the entry's body: {"variant":"<64 characters>"} and some whitespace.
const MaxEntryBody = 1024

// EntryBody is the body of POST /seckill/{sale}/draw.
type EntryBody struct {
	Variant string `json:"variant"`
}

// ParseEntry decodes an entry's body strictly (internal/strictjson: no unknown, repeated or
// miscased key, nothing after the object) and checks the variant's syntax; "" (or absent)
// names the sale's only variant. Anything else is a bad request, before Redis is asked.
func ParseEntry(body []byte) (string, bool) {
	var b EntryBody
	if len(body) > MaxEntryBody || strictjson.Unmarshal(body, &b) != nil {
		return "", false
	}
	if b.Variant != "" && !contract.ValidVariantID(b.Variant) {
		return "", false
	}
	return b.Variant, true
}
