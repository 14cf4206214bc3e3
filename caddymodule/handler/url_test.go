package handler

import "net/url"

func mustURL(p string) *url.URL { return &url.URL{Path: p} }
