package ui

import (
	"html"
	"strings"
)

func replaceAll(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, k, v)
	}
	return s
}

func htmlEscape(s string) string { return html.EscapeString(s) }
