package core

import (
	"encoding/json"
	"strconv"
)

// AppendAnswer appends a's JSON to dst, byte for byte what encoding/json writes for it, with
// no allocation beyond dst's growth (the poll path's answers). Every string of an
// answer is ASCII the room made (a state, a ticket, an entry id, an RFC 3339 time, a reason);
// one that would need escaping goes through encoding/json, so the bytes stay the same.
func AppendAnswer(dst []byte, a *QueueAnswer) []byte {
	if !plain(a.Ticket) || !plain(a.EntryID) || !plain(a.State) || !plain(a.AdmittedUntil) || !plain(a.Reason) {
		c := *a // a copy escapes to encoding/json, not the caller's answer
		b, err := json.Marshal(&c)
		if err != nil { // cannot happen: strings and integers only
			return append(dst, "{}"...)
		}
		return append(dst, b...)
	}
	dst = append(dst, '{')
	if a.Ticket != "" {
		dst = append(append(append(dst, `"ticket":"`...), a.Ticket...), `",`...)
	}
	if a.EntryID != "" {
		dst = append(append(append(dst, `"entry_id":"`...), a.EntryID...), `",`...)
	}
	dst = append(append(append(dst, `"state":"`...), a.State...), `","position":`...)
	dst = strconv.AppendInt(dst, a.Position, 10)
	dst = strconv.AppendInt(append(dst, `,"ahead":`...), a.Ahead, 10)
	dst = strconv.AppendInt(append(dst, `,"estimated_wait_s":`...), a.EstimatedWaitS, 10)
	if len(a.EstimatedWaitRangeS) > 0 {
		dst = append(dst, `,"estimated_wait_range_s":[`...)
		for i, v := range a.EstimatedWaitRangeS {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendInt(dst, v, 10)
		}
		dst = append(dst, ']')
	}
	dst = strconv.AppendInt(append(dst, `,"refresh_s":`...), a.RefreshS, 10)
	if a.AdmittedUntil != "" {
		dst = append(append(append(dst, `,"admitted_until":"`...), a.AdmittedUntil...), '"')
	}
	if a.Reason != "" {
		dst = append(append(append(dst, `,"reason":"`...), a.Reason...), '"')
	}
	dst = strconv.AppendInt(append(dst, `,"units_left":`...), a.UnitsLeft, 10)
	return append(dst, '}')
}

// plain reports whether encoding/json writes s as it is between quotes: printable ASCII
// without '"', '\\' and the HTML characters it escapes ('<', '>', '&').
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
