package core

import (
	"net/http"
	"strconv"
	"sync"
)

// Answer writes a handler's JSON answer (a 202 accepted, a 200 token): build appends the body
// to a pooled buffer, sent with status, Content-Type application/json, Cache-Control no-store
// and its Content-Length. The buffer goes back to the pool after the write (an io.Writer
// does not keep what it is given).
func Answer(w http.ResponseWriter, status int, build func(body []byte) []byte) error {
	bp := Buffer()
	body := build((*bp)[:0])
	h := w.Header()
	v := make([]string, 3)
	v[0], v[1], v[2] = "application/json", "no-store", strconv.Itoa(len(body))
	h["Content-Type"], h["Cache-Control"], h["Content-Length"] = v[0:1:1], v[1:2:2], v[2:3:3]
	w.WriteHeader(status)
	_, err := w.Write(body)
	Release(bp, body)
	return err
}

// Buffer takes a body buffer from the pool the answers and the refusals built per user
// share; Release gives it back, holding body, once the body is written (a buffer grown past
// maxAnswerBuffer is left to the collector).
func Buffer() *[]byte { return answerBuffers.Get().(*[]byte) }

// Release returns bp, now holding body, to the pool (see Buffer).
func Release(bp *[]byte, body []byte) {
	if cap(body) <= maxAnswerBuffer {
		*bp = body
		answerBuffers.Put(bp)
	}
}

// maxAnswerBuffer is the largest buffer kept in the pool.
const maxAnswerBuffer = 4096

var answerBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 256)
	return &b
}}
