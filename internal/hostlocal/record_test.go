package hostlocal

import "testing"

func TestReservationContentRoundTrip(t *testing.T) {
	tests := []struct {
		a    Attachment
		body string
	}{
		{Attachment{ContainerID: "cid", IfName: "eth0"}, "cid\r\neth0"},
		{Attachment{ContainerID: "cid", IfName: "eth0", Network: "net-a"}, "cid\r\neth0\r\nnet-a"},
	}
	for _, tt := range tests {
		if got := reservationContent(tt.a); got != tt.body {
			t.Errorf("content(%+v) = %q, want %q", tt.a, got, tt.body)
		}
		if got := parseReservation([]byte(tt.body + "\n")); got != tt.a {
			t.Errorf("parse(%q) = %+v, want %+v", tt.body, got, tt.a)
		}
	}
	if got := parseReservation([]byte(" legacy-id \n")); got != (Attachment{ContainerID: "legacy-id"}) {
		t.Errorf("legacy body parsed as %+v", got)
	}
	a := Attachment{ContainerID: "c", IfName: "eth0", Network: "n1"}
	if !a.Is(Attachment{ContainerID: "c", IfName: "eth0", Network: "n2"}) || a.Is(Attachment{ContainerID: "c", IfName: "eth1"}) {
		t.Errorf("Is must compare container ID and ifname only")
	}
}
