package roomkit

import (
	"context"
	"net/http"

	"go.uber.org/zap"
)

// CheckBot runs the site's challenge provider on an entry to sale (endpoint names it in the
// counts): answered is true when the entry is refused, the refusal written (err is the
// writer's). An entry of a site without a provider, and one that passes, is not answered.
// A provider that cannot be asked is logged; the site's fail_open or fail_closed decides.
func (k *Kit) CheckBot(ctx context.Context, w http.ResponseWriter, r *http.Request, endpoint, sale string) (answered bool, err error) {
	if k.ChallengeProvider == nil {
		return false, nil
	}
	o, ref, perr := k.ChallengeProvider.Check(ctx, w, r, sale)
	if perr != nil && k.Logger != nil {
		k.Logger.Warn("the bot challenge provider could not be asked", zap.String("provider", k.ChallengeProvider.Name),
			zap.Stringer("outcome", o), zap.Error(perr))
	}
	if o.Enters() {
		return false, nil
	}
	return true, k.Endpoints.Refuse(w, endpoint, ref)
}
