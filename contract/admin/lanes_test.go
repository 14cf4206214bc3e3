package admin

import (
	"reflect"
	"testing"
)

// The room hash's lanes field reads back as the lanes it was written from; "" and fields of
// another shape read as no lanes.
func TestTheLanesFieldReadsBackAsItsLanes(t *testing.T) {
	spec := RoomSpec{LaneMode: LaneModePrio, Lanes: []LaneSpec{{Name: "members", Kind: LaneClaim, Claim: "member.gold"},
		{Name: "invited", Kind: LaneInvitation, Share: 0.25}, {Name: "public", Kind: LanePublic, Share: 0.5}}}
	mode, lanes, ok := ParseLanesField(spec.LanesField())
	if !ok || mode != LaneModePrio || !reflect.DeepEqual(lanes, spec.Lanes) {
		t.Fatalf("%q read back as %q %+v %v", spec.LanesField(), mode, lanes, ok)
	}
	if mode, _, ok := ParseLanesField(RoomSpec{Lanes: spec.Lanes}.LanesField()); !ok || mode != LaneModeShare {
		t.Fatalf("the default mode read back as %q %v", mode, ok)
	}
	for _, bad := range []string{"", "share", "share,members:claim", "share,:public:1:", "share,public:public:x:"} {
		if _, lanes, ok := ParseLanesField(bad); ok || lanes != nil {
			t.Errorf("%q read as lanes %+v", bad, lanes)
		}
	}
}
