package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// apiError is a refusal of the backend: its status and the contract's code and message.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// call sends a request to the admin API and decodes a 2xx answer into out (raw receives the
// body as it came, for -o json). A refusal is an *apiError.
func (c *cli) call(ctx context.Context, method, path string, body any, out any, raw *[]byte) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.url, "/")+path, rd)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		e := &apiError{Status: resp.StatusCode}
		if json.Unmarshal(b, e) != nil || e.Code == "" {
			e.Code, e.Message = "http_"+fmt.Sprint(resp.StatusCode), strings.TrimSpace(string(b))
		}
		return e
	}
	if raw != nil {
		*raw = b
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// show prints an answer: the raw JSON with -o json, the table otherwise.
func (c *cli) show(raw []byte, table func(w io.Writer)) {
	if c.output == "json" {
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") != nil {
			buf.Reset()
			buf.Write(raw)
		}
		fmt.Fprintln(c.out, strings.TrimSpace(buf.String()))
		return
	}
	table(c.out)
}
