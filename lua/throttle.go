package lua

// ThrottleRefund gives back an admission of Throttle that another zone of the same request
// overruled (throttle_refund.lua): a ZREM for a sorted-set log, a splice for a compact one.
var ThrottleRefund = mustLoad("throttle_refund")
