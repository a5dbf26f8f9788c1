package integration

import "github.com/twmb/franz-go/pkg/kadm"

type kadmOffset = kadm.ListedOffset
