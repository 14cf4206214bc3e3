package pagekit

import (
	"html/template"

	"golang.org/x/text/message"
)

// Catalogues is a Kit of our nine catalogues alone, for a page the server writes whole and
// which runs no script (the fairness report's, caddymodule/reportpage): it has no template of
// its own, but the same languages, plural forms, number formats and choice of language
// (Lang) as the room's and the draw's pages.
func Catalogues() (*Kit, error) {
	k := &Kit{sales: map[string]*compiled{}, saleLang: map[string]string{}}
	if err := k.loadCatalogues(nil); err != nil {
		return nil, err
	}
	return k, nil
}

// Static is what a template of a page written whole sees in lang: the messages (T), the
// numbers (Number), the direction and the kit's style; no Script (the page runs none).
func (k *Kit) Static(lang, sale string) Data {
	return Data{Kind: k.kind.Name, Sale: sale, Lang: lang, Dir: Direction(lang), msgs: k.cats[lang],
		Style: template.CSS(Style), p: message.NewPrinter(numbering(lang))}
}
