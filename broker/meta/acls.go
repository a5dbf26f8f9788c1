package meta

import (
	"slices"

	"github.com/raftka/raftka/broker/acl"
)

// CreateACLs adds ACL bindings (Kafka's CreateAcls); one already there is
// no change.
type CreateACLs struct {
	Bindings []acl.Binding
}

// DeleteACLs removes the bindings named, which the proposing broker
// found its DeleteAcls filters to match; one already gone is no change.
type DeleteACLs struct {
	Bindings []acl.Binding
}

func (s *State) createACLs(c *CreateACLs) Outcome {
	for _, b := range c.Bindings {
		if !slices.Contains(s.ACLs, b) {
			s.ACLs = append(s.ACLs, b)
		}
	}
	return Outcome{}
}

func (s *State) deleteACLs(c *DeleteACLs) Outcome {
	s.ACLs = slices.DeleteFunc(s.ACLs, func(b acl.Binding) bool { return slices.Contains(c.Bindings, b) })
	if len(s.ACLs) == 0 {
		s.ACLs = nil // as a snapshot restores it
	}
	return Outcome{}
}
