package roomkit

import (
	"context"
	"net/http"
)

// CheckBot runs the site's challenge provider (challenge_provider) on an entry to sale
// (endpoint names it in the counts): answered is true when the entry is refused, the refusal
// written (err is the writer's). An entry of a site without a provider, and one that passes,
// is not answered.
func (k *Kit) CheckBot(ctx context.Context, w http.ResponseWriter, r *http.Request, endpoint, sale string) (answered bool, err error) {
	if o, ref := k.ChallengeProvider.Check(ctx, w, r, sale); !o.Enters() {
		return true, k.Endpoints.Refuse(w, endpoint, ref)
	}
	return false, nil
}
