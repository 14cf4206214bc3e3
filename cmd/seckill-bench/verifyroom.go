package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/seckilledge/seckill/internal/invariants"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runVerifyRoom is `seckill-bench verify-room`: anyone's check of a waiting room's order once
// its sale has ended (docs/room.md). It reads the public room and pre-queue list from a
// gateway, checks the revealed seed against the commitment published at preheat, recomputes
// every rank HMAC-SHA256(seed, entry_id) and checks the admission order is the ranks' order.
//
//	seckill-bench verify-room -gateway http://127.0.0.1:8080 -sale S [-entry <your entry id>]
func runVerifyRoom(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify-room", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gateway := fs.String("gateway", stackenv.Get("SECKILL_GATEWAY", "http://127.0.0.1:8080"), "gateway base URL")
	sale := fs.String("sale", "", "sale id (required)")
	entry := fs.String("entry", "", "an entry id to locate in the order (yours, from the enter answer)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *sale == "" {
		return errorf(stderr, "verify-room: -sale is required")
	}
	var room struct {
		State          string `json:"state"`
		SeedCommitment string `json:"seed_commitment"`
		Seed           string `json:"seed"`
	}
	var list struct {
		Seed    string   `json:"seed"`
		Entries []string `json:"entries"`
	}
	if err := getJSON(ctx, *gateway+"/seckill/"+*sale+"/room", &room); err != nil {
		return errorf(stderr, "verify-room: %v", err)
	}
	// The list comes in pages: each names the `after` of the next one in "next" (docs/room.md).
	for after := ""; ; {
		var page struct {
			Seed    string   `json:"seed"`
			Entries []string `json:"entries"`
			Next    string   `json:"next"`
		}
		u := *gateway + "/seckill/" + *sale + "/room/prequeue"
		if after != "" {
			u += "?after=" + url.QueryEscape(after)
		}
		if err := getJSON(ctx, u, &page); err != nil {
			return errorf(stderr, "verify-room: %v (the list is published once the sale has ended)", err)
		}
		if list.Seed != "" && page.Seed != list.Seed {
			return errorf(stderr, "verify-room: the pages of the list name two seeds")
		}
		list.Seed = page.Seed
		list.Entries = append(list.Entries, page.Entries...)
		if page.Next == "" || page.Next == after {
			break
		}
		after = page.Next
	}
	if list.Seed != room.Seed {
		fmt.Fprintf(stdout, "FAIL  the pre-queue list's seed differs from the room's\n")
		return 1
	}
	problems := verifyRoomOrder(room.SeedCommitment, list.Seed, list.Entries)
	for _, p := range problems {
		fmt.Fprintf(stdout, "FAIL  %s\n", p)
	}
	if len(problems) > 0 {
		return 1
	}
	fmt.Fprintf(stdout, "PASS  seed matches the commitment %s\n", room.SeedCommitment)
	fmt.Fprintf(stdout, "PASS  %d pre-queue entries admitted in the order of HMAC-SHA256(seed, entry_id)\n", len(list.Entries))
	if *entry != "" {
		for i, e := range list.Entries {
			if e == *entry {
				fmt.Fprintf(stdout, "      entry %s: place %d of %d\n", e, i+1, len(list.Entries))
				return 0
			}
		}
		fmt.Fprintf(stdout, "FAIL  entry %s is not in the pre-queue list\n", *entry)
		return 1
	}
	return 0
}

// verifyRoomOrder lists what is wrong with a revealed room (internal/invariants holds the rule, which
// the whole-system verifier shares).
func verifyRoomOrder(commitment, seedHex string, entries []string) []string {
	return invariants.RoomOrderProblems(commitment, seedHex, entries)
}

func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
