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
		if !slices.Contains(s.acls, b) {
			s.acls = append(s.acls, b)
		}
	}
	return Outcome{}
}

func (s *State) deleteACLs(c *DeleteACLs) Outcome {
	s.acls = slices.DeleteFunc(s.acls, func(b acl.Binding) bool { return slices.Contains(c.Bindings, b) })
	if len(s.acls) == 0 {
		s.acls = nil // as a snapshot restores it
	}
	return Outcome{}
}
