package roomkit

import (
	"context"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/seckilledge/seckill/caddymodule/botcheck"
)

// Why an entrant is flagged: the reason label of the handlers' flagged_total.
const (
	// FlagChallenge: the challenge provider's verdict (a score below min_score, or a missing
	// or failed token with on_fail flag).
	FlagChallenge = "challenge"
	// FlagBan: a throttle zone bans the user or his device (the room's ban_zones).
	FlagBan = "ban"
	// FlagRule: the request matches one of the flag matcher sets.
	FlagRule = "rule"
)

// CheckEntry runs the site's challenge provider (challenge_provider) and the flag rules on an
// entry to sale (endpoint names it in the counts): answered is true when the entry is refused,
// the refusal written (err is the writer's). Otherwise flag names why the entrant is flagged
// (FlagChallenge, FlagRule; "" when he is not): the handler enters him like anyone and never
// admits or draws him.
func (k *Kit) CheckEntry(ctx context.Context, w http.ResponseWriter, r *http.Request, endpoint, sale string) (flag string, answered bool, err error) {
	o, ref := k.ChallengeProvider.CheckEntry(ctx, w, r, sale)
	if !o.Enters() {
		return "", true, k.Endpoints.Refuse(w, endpoint, ref)
	}
	if o == botcheck.Flagged {
		return FlagChallenge, false, nil
	}
	if len(k.flagSets) > 0 {
		if ok, err := k.flagSets.AnyMatchWithError(r); ok && err == nil {
			return FlagRule, false, nil
		}
	}
	return "", false, nil
}

// provisionFlag loads the flag matcher sets.
func (k *Kit) provisionFlag(ctx caddy.Context) error {
	if len(k.FlagRaw) == 0 {
		return nil
	}
	mods, err := ctx.LoadModule(k, "FlagRaw")
	if err != nil {
		return fmt.Errorf("flag: %w", err)
	}
	return k.flagSets.FromInterface(mods)
}
