package backend

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// mountUI adds the live page (GET /admin/ui) and its event stream.
func (s *Service) mountUI(mux *http.ServeMux, reg *prometheus.Registry) {}
