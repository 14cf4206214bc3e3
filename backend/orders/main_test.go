//go:build integration

package orders_test

import (
	"testing"

	"github.com/seckilledge/seckill/backend/internal/servicetest"
)

// TestMain lets the fault tests re-execute this binary as a whole backend (servicetest.Main,
// Env.Child) to kill it with SIGKILL.
func TestMain(m *testing.M) { servicetest.Main(m) }
