package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/seckilledge/seckill/bench/drawcheck"
	"github.com/seckilledge/seckill/internal/stackenv"
)

// runVerifyDraw is `seckill-bench verify-draw`: anyone's check of a draw (docs/draw.md,
// "Checking a draw"). It reads the published result and every entry from a gateway (or from a
// file saved earlier), checks the revealed seed against the commitment, the entries against the
// root and each wave's winners against the ranking recomputed from the seed, and with
// -proof-user checks that user's Merkle inclusion proof. With -commitment (the seed commitment
// the draw page showed before the entries closed, as the user saved it) the published commitment
// must be that one: a seed re-rolled afterwards opens a new commitment of its own, which the
// published data alone cannot tell from the first.
//
//	seckill-bench verify-draw -url http://127.0.0.1:8080 -sale S [-commitment C] [-proof-user U -entry-id E] [-save draw.json]
//	seckill-bench verify-draw -file draw.json [-commitment C]
func runVerifyDraw(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify-draw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("url", stackenv.Get("SECKILL_GATEWAY", "http://127.0.0.1:8080"), "gateway (or order API) base URL")
	sale := fs.String("sale", "", "sale id (required unless -file)")
	user := fs.String("proof-user", "", "also fetch and check this user's inclusion proof (sent as X-User-ID)")
	entryID := fs.String("entry-id", "", "with -proof-user: the entry id the user received when entering; the proof must be of it")
	file := fs.String("file", "", "check a draw saved with -save instead of fetching it (offline)")
	save := fs.String("save", "", "save the fetched result and entries to this file (format: docs/draw.md)")
	page := fs.Int("page", 1000, "entries asked per page")
	saved := fs.String("commitment", "", "the seed commitment you saved before the entries closed (64 hex digits): the published one must be it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *saved != "" && !drawcheck.IsCommitment(*saved) {
		fmt.Fprintf(stderr, "verify-draw: -commitment %q is not a commitment (64 hex digits)\n", *saved)
		return 2
	}
	client := drawcheck.Client{Base: *base, PageSize: *page}
	var f *drawcheck.File
	var err error
	switch {
	case *file != "":
		if f, err = drawcheck.ReadFile(*file); err != nil {
			return errorf(stderr, "verify-draw: %v", err)
		}
		if *sale != "" && *sale != f.Sale {
			return errorf(stderr, "verify-draw: %s holds the draw of sale %s, not %s", *file, f.Sale, *sale)
		}
	case *sale == "":
		return errorf(stderr, "verify-draw: -sale (or -file) is required")
	default:
		if f, err = client.Fetch(ctx, *sale); err != nil {
			return errorf(stderr, "verify-draw: %v", err)
		}
		if *save != "" {
			if err := drawcheck.WriteFile(*save, f); err != nil {
				return errorf(stderr, "verify-draw: %v", err)
			}
		}
	}
	res, err := f.ParsedResult()
	if err != nil {
		return errorf(stderr, "verify-draw: %v", err)
	}
	rep := drawcheck.Check(f.Sale, res, f.Entries)
	if *saved != "" {
		drawcheck.CheckCommitment(rep, *saved, res)
	}
	if *user != "" {
		// A proof is the user's own, from the server: with -file, the server is still asked.
		p, err := client.FetchProof(ctx, f.Sale, *user)
		if err != nil {
			return errorf(stderr, "verify-draw: the proof: %v", err)
		}
		drawcheck.CheckProof(rep, *user, *entryID, p, res, f.Entries)
	}
	fmt.Fprint(stdout, rep.String())
	if !rep.OK() {
		return 1
	}
	return 0
}
