package hold

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/raftka/raftka/broker/growth"
	"github.com/raftka/raftka/broker/meta"
)

// Statuses are the ordered growths of every topic that has one in
// progress or has lifted one, or of the one topic named.
func Statuses(s *meta.State, topic string) []growth.Status {
	out := []growth.Status{}
	for _, t := range s.Topics() {
		if (topic != "" && t.Name != topic) || (len(t.Growths) == 0 && t.LastLift == nil) {
			continue
		}
		st := growth.Status{Topic: t.Name, ForcedLifts: t.ForcedLifts}
		for _, g := range t.Growths {
			rule := g.Rule() // the releases the groups must reach
			gs := growth.GrowthStatus{Seq: g.Seq, From: g.From, To: g.To, Hidden: g.Hidden(),
				Splits: g.Splits, Holds: g.Holds, Releases: rule.Releases}
			if !g.Hidden() {
				gs.HeldSince = time.UnixMilli(g.VisibleAt).UTC()
				gs.Draining = growth.Draining(rule, countedCommits(s, t, g))
			}
			st.Growths = append(st.Growths, gs)
		}
		if l := t.LastLift; l != nil {
			st.LastLift = &growth.Lift{Seq: l.Seq, Reason: growth.Reason(l.Reason), At: time.UnixMilli(l.At).UTC(), HeldMs: l.HeldMs}
		}
		out = append(out, st)
	}
	return out
}

// Handler serves GET /growth: Statuses as JSON, of the topic the query
// names (?topic=) or of all.
func Handler(m Metadata) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var out []growth.Status
		m.Read(func(s *meta.State) { out = Statuses(s, r.URL.Query().Get("topic")) })
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}
