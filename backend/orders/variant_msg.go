package orders

import "github.com/seckilledge/seckill/contract"

// The variant fields of an order message, read in one place: a message without them is one
// unit of the sale's only stock, its user's first purchase.

// msgVariant is the variant the order is for ("" for a sale without variants).
func msgVariant(m contract.OrderMessage) string { return m.Variant }

// msgUnits is the number of units the order holds (1 when the message does not say).
func msgUnits(m contract.OrderMessage) int { return m.Units() }

// msgSeq is the user's purchase number in the sale (1 when the message does not say).
func msgSeq(m contract.OrderMessage) int { return m.Seq() }

// plainOrder reports whether m is a single-stock, one-unit, first purchase: the shape of every
// order of a sale without variants and with limit 1, written exactly as before variants.
func plainOrder(m contract.OrderMessage) bool {
	return m.Variant == "" && m.Units() == 1 && m.Seq() == 1
}
