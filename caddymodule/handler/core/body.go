package core

import (
	"strconv"
	"unicode/utf8"
)

// AppendBody appends the JSON body of r to dst: byte for byte what encoding/json writes for
// the contract.Refusal of r (FuzzAppendBodyIsEncodingJSONs holds them equal), without its
// reflection and allocations.
func AppendBody(dst []byte, r Refusal) []byte {
	dst = append(dst, `{"code":`...)
	dst = appendString(dst, r.Code)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, r.Message)
	if r.OrderID != "" {
		dst = append(dst, `,"order_id":`...)
		dst = appendString(dst, r.OrderID)
	}
	if r.Variant != "" {
		dst = append(dst, `,"variant":`...)
		dst = appendString(dst, r.Variant)
	}
	if r.Held != 0 {
		dst = append(dst, `,"held":`...)
		dst = strconv.AppendInt(dst, int64(r.Held), 10)
	}
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json.Marshal does: HTML-safe (<, >
// and & as \u00XX), \b \f \n \r \t by name, other control bytes as \u00XX, invalid UTF-8
// as \ufffd, and U+2028 and U+2029 escaped (JavaScript reads them as line ends).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
