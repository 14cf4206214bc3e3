package backend

import (
	"context"

	"github.com/seckilledge/seckill/backend/internal/schema"
)

// Migrate brings the database at url to the newest schema (backend/internal/schema). It is safe
// to run from several backend instances at once.
func Migrate(ctx context.Context, url string) error { return schema.Migrate(ctx, url) }
