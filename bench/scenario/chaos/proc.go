package chaos

import (
	"time"

	"github.com/seckilledge/seckill/internal/proc"
)

// Proc is one process of the run that the schedule may stop cleanly, kill with SIGKILL and
// start again: a private Redis, RabbitMQ or Postgres, a gateway, a backend (internal/harness
// starts them, internal/proc supervises them). Every Proc is the run's own: nothing shared with
// other users of the machine is ever stopped.
type Proc struct {
	*proc.Server
	// ctl runs the server's control tool (rabbitmqctl), for faults that are not a stop.
	ctl func(timeout time.Duration, args ...string) error
}
