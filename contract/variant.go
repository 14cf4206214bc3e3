package contract

import "strings"

// Variants and per-user quantity limits (docs/DESIGN.md, "Variants and quantities").
//
// A sale may have variants (sizes, colours), each with its own stock, and a per-user limit of
// units. In Redis the sale's meta hash keeps FieldStock as the TOTAL units left across its
// variants (what the room, the sold-out flag and the shard rebalance read), plus one field
// VariantField(v) per variant and FieldVariants (their count). A sale with a limit above 1
// also has a held hash (HeldKey): user -> units held, which the gate script checks the limit
// against (UsesHeld). With a limit of 1 the buyers hash says it all (a buyer holds one unit,
// and buys once), so no held hash is written, variants or not: a variant purchase then costs
// what a single-stock one does. A sale without variants and with a limit of 1 has none of
// these fields and keys: it is decided exactly as before.

// MaxVariants bounds the variants of one sale.
const MaxVariants = 256

// MaxQuantity bounds a sale's per-user limit, hence the quantity of one purchase.
const MaxQuantity = 1000

// ValidVariantID reports whether s is a valid variant id: the syntax of a sale id (1 to 64
// characters of [A-Za-z0-9_-]), so it may appear in keys, fields, events and logs unescaped.
func ValidVariantID(s string) bool { return ValidID(s) }

// Meta hash fields of a sale with variants or a per-user limit.
const (
	// FieldLimit is the per-user limit in units; absent means 1.
	FieldLimit = "limit"
	// FieldVariants is the number of variants; absent for a single-stock sale.
	FieldVariants = "variants"
	// FieldOnlyVariant is the id of the variant of a sale that has exactly one: a purchase
	// that names none takes that one.
	FieldOnlyVariant = "variant"
	// VariantFieldPrefix starts the field holding a variant's units left.
	VariantFieldPrefix = "v:"
)

// VariantField is the meta hash field holding variant's units left: "v:<variant>".
func VariantField(variant string) string { return VariantFieldPrefix + variant }

// UsesHeld reports whether a sale with per-user limit limit keeps a held hash (HeldKey): only
// above 1. Otherwise a user's units are 1 when the buyers hash has the user, else 0.
func UsesHeld(limit int) bool { return limit > 1 }

// HeldKey is the sale's hash of user id -> units the user holds in the sale, for a sale with
// a limit above 1 (UsesHeld). It also holds one counter per user, field HeldSeqField(user):
// the number of purchases the user made (the order message's seq). User ids never contain
// '#', so the two kinds of fields cannot collide; a reader that wants units skips '#' fields.
func HeldKey(sale string) string { return "seckill:" + SaleTag(sale) + ":held" }

// HeldSeqField is the field of HeldKey counting user's purchases in the sale.
func HeldSeqField(user string) string { return "#" + user }

// VariantTarget is the name of a variant of a sale or shard in the sale events and the
// gateways' sold-out flags: "<sale or shard>/<variant>" ("sold_out:<sale>/<variant>" is
// published when a variant sells its last unit; "restock:<sale>" clears all the sale's flags).
func VariantTarget(target, variant string) string { return target + "/" + variant }

// SplitVariantTarget splits "<sale or shard>/<variant>"; variant is "" when t names no
// variant. ok is false when either part is malformed.
func SplitVariantTarget(t string) (target, variant string, ok bool) {
	target, variant, found := strings.Cut(t, "/")
	if !ValidSaleOrShard(target) || (found && !ValidVariantID(variant)) {
		return "", "", false
	}
	return target, variant, true
}

// VariantMoveID is the move id of a rebalance move of variant's units between two shards of a
// sharded sale with variants: "<unique>/<variant>". shard_take.lua and shard_give.lua read the
// variant from the id, so a journal entry keeps its format ("<receiver>|<units>") and an
// interrupted move is finished like any other. A move id without a variant takes nothing from
// a shard with variants (its units could not be put back into the right variant).
func VariantMoveID(unique, variant string) string { return unique + "/" + variant }
