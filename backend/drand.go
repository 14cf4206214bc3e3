package backend

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/seckilledge/seckill/backend/draw"
	drawmath "github.com/seckilledge/seckill/contract/draw"
)

// DrandConfig reads the draws' beacon settings (Config.Drand*; docs/draw.md, "A public
// beacon"): the endpoints, and the chain new draws name by default (nil without endpoints).
// A chain hash other than quicknet's needs its public key, period and genesis; quicknet's
// are built in, and given ones must match them.
func (c Config) DrandConfig() (*draw.Drand, *drawmath.Beacon, error) {
	urls, err := draw.ParseDrandURLs(c.DrandURLs)
	if err != nil {
		return nil, nil, err
	}
	if len(urls) == 0 {
		if c.DrandChainHash != "" || c.DrandPublicKey != "" {
			return nil, nil, errors.New("SECKILL_DRAND_CHAIN_HASH / SECKILL_DRAND_PUBLIC_KEY need SECKILL_DRAND_URLS: without an endpoint no round could be fetched")
		}
		return nil, nil, nil
	}
	chain := drawmath.Quicknet
	if c.DrandChainHash != "" && c.DrandChainHash != chain.ChainHash {
		chain = drawmath.Beacon{ChainHash: c.DrandChainHash, Scheme: drawmath.SchemeUnchainedG1}
		if c.DrandPublicKey == "" || c.DrandPeriod == "" || c.DrandGenesis == "" {
			return nil, nil, errors.New("SECKILL_DRAND_CHAIN_HASH names a chain other than quicknet: give SECKILL_DRAND_PUBLIC_KEY, SECKILL_DRAND_PERIOD and SECKILL_DRAND_GENESIS too")
		}
	}
	given := chain
	if c.DrandPublicKey != "" {
		given.PublicKey = c.DrandPublicKey
	}
	if c.DrandPeriod != "" {
		if given.Period, err = strconv.Atoi(c.DrandPeriod); err != nil {
			return nil, nil, fmt.Errorf("SECKILL_DRAND_PERIOD: %w", err)
		}
	}
	if c.DrandGenesis != "" {
		if given.GenesisTime, err = strconv.ParseInt(c.DrandGenesis, 10, 64); err != nil {
			return nil, nil, fmt.Errorf("SECKILL_DRAND_GENESIS: %w", err)
		}
	}
	if chain.ChainHash == drawmath.Quicknet.ChainHash && given != chain {
		return nil, nil, errors.New("SECKILL_DRAND_*: the public key, period or genesis given are not quicknet's")
	}
	if err := given.ValidateChain(); err != nil {
		return nil, nil, fmt.Errorf("SECKILL_DRAND_*: %w", err)
	}
	return &draw.Drand{URLs: urls}, &given, nil
}
