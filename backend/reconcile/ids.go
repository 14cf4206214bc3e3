package reconcile

import (
	"time"

	"github.com/google/uuid"
)

// AcceptedAt reads the acceptance time out of a UUIDv7 order id.
func AcceptedAt(orderID string) (time.Time, bool) {
	u, err := uuid.Parse(orderID)
	if err != nil || u.Version() != 7 {
		return time.Time{}, false
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec), true
}
