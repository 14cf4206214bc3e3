package pagetest

// Language is one of the nine languages the pages ship, with what a browser set to it sends as
// Accept-Language.
type Language struct{ Lang, Accept string }

// Languages are the pages' nine languages, for the language sweeps of the pages' tests.
var Languages = []Language{
	{"en", "en-US,en;q=0.9"}, {"de", "de-DE,de;q=0.9"}, {"es", "es-MX,es;q=0.9"}, {"fr", "fr-FR,fr;q=0.9"},
	{"pt-BR", "pt-BR,pt;q=0.9"}, {"ja", "ja-JP,ja;q=0.9"}, {"ko", "ko-KR,ko;q=0.9"}, {"zh-Hans", "zh-CN,zh;q=0.9"},
	{"ar", "ar-EG,ar;q=0.9"},
}
