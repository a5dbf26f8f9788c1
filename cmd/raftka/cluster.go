package main

import (
	"context"
	"fmt"
	"strconv"
)

func clusterInfo(ctx context.Context, e *env, args []string) error {
	if len(args) > 0 {
		return usagef("no arguments")
	}
	adm, done, err := e.admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	type broker struct {
		ID   int32  `json:"id"`
		Addr string `json:"address"`
		Rack string `json:"rack,omitempty"`
	}
	view := struct {
		Cluster    string   `json:"clusterId"`
		Controller int32    `json:"controller"`
		Brokers    []broker `json:"brokers"`
	}{Cluster: md.Cluster, Controller: md.Controller}
	for _, b := range md.Brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		view.Brokers = append(view.Brokers, broker{b.NodeID, fmt.Sprintf("%s:%d", b.Host, b.Port), rack})
	}
	if e.json {
		return printJSON(e.out, view)
	}
	_, _ = fmt.Fprintf(e.out, "cluster %s, controller %d\n", view.Cluster, view.Controller)
	var cells [][]string
	for _, b := range view.Brokers {
		cells = append(cells, []string{strconv.Itoa(int(b.ID)), b.Addr, b.Rack})
	}
	return printTable(e.out, []string{"BROKER", "ADDRESS", "RACK"}, cells)
}
