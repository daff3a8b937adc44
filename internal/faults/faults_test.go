package faults_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/httptools/httptools/internal/faults"
)

// TestLinkCutsAndHeals: an echo server behind a link answers through it,
// answers nothing while the link is cut (a line sent meanwhile is lost),
// and once it is healed the held connection is closed and a new one is
// answered.
func TestLinkCutsAndHeals(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					c.Write(append(sc.Bytes(), '\n'))
				}
				c.Close()
			}()
		}
	}()
	l := faults.New(t, ln.Addr().String())
	c, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(s string, wait time.Duration) (string, error) {
		c.Write([]byte(s + "\n"))
		c.SetReadDeadline(time.Now().Add(wait))
		return r.ReadString('\n')
	}
	if got, err := say("one", time.Minute); err != nil || got != "one\n" {
		t.Fatalf("through the link: %q %v", got, err)
	}
	l.Cut()
	if got, err := say("two", 300*time.Millisecond); err == nil {
		t.Fatalf("through a cut link: %q", got)
	}
	l.Heal()
	// The connection the cut held is closed as it heals; a new one passes.
	c.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("the connection held through the cut still answers")
	}
	c2, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c, r = c2, bufio.NewReader(c2)
	if got, err := say("three", time.Minute); err != nil || got != "three\n" {
		t.Fatalf("through the healed link: %q %v", got, err)
	}
}
