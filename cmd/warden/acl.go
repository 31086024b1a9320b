package main

import (
	"context"
	"fmt"

	"github.com/warden-go/warden/client"
)

// aclCmd prints the ACL rules of client.ACLRules or
// client.ReadOnlyACLRules.
type aclCmd struct {
	ReadOnly bool   `help:"The rules of ls, inspect, watch and clients (read only) instead of a warden client's."`
	Names    string `arg:"" optional:"" default:"*" help:"The glob the lock names share (orders:*)."`
}

func (c *aclCmd) Run(_ context.Context, a *app) error {
	rules := client.ACLRules
	if c.ReadOnly {
		rules = client.ReadOnlyACLRules
	}
	s, err := rules(c.Names)
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, s)
	return nil
}
