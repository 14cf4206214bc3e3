package edge

// Joint is another handler's check (the throttle's zones) carried by a decision's script call,
// so both cost one round trip (lua.Throttled): AppendKeys and AppendArgs add its KEYS and ARGV
// after the decision's, and Answer gets its part of the reply, or the call's error with a nil
// reply, and reports whether it refused the request (the decision then did not run).
type Joint interface {
	AppendKeys(dst []string) []string
	AppendArgs(dst []any) []any
	Answer(reply []any, err error) (refused bool)
}
