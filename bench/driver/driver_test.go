package driver

import "testing"

// The stand-in's CPU is counted because it is one of the stack's other process trees.
func TestOtherProcessTreesAreCountedWithTheStacksOwn(t *testing.T) {
	d := &Driver{Stack: &Stack{GatewayPID: 10, Others: map[string]int{"standin": 11}}}
	if s := d.Servers(); s["gateway"] != 10 || s["standin"] != 11 {
		t.Errorf("servers %v", s)
	}
}
