package backend

import (
	"flag"
	"os"
	"time"
)

// Config is the backend's configuration. Every field has a flag and an environment variable;
// the flag wins. Secrets (the admin token, passwords inside URLs) belong in the environment.
type Config struct {
	Listen     string        // SECKILL_BACKEND_LISTEN, -listen: order API and admin API
	PGURL      string        // SECKILL_PG_URL, -pg
	RedisAddr  string        // SECKILL_REDIS_ADDR, -redis
	AMQPURL    string        // SECKILL_AMQP_URL, -amqp
	AdminToken string        // SECKILL_ADMIN_TOKEN (environment only)
	BatchSize  int           // SECKILL_BATCH_SIZE, -batch-size
	BatchWait  time.Duration // SECKILL_BATCH_WAIT, -batch-wait
	Baselines  bool          // SECKILL_BASELINES, -baselines: the naive benchmark endpoints
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// ConfigFromFlags reads the environment, then the command line.
func ConfigFromFlags(fs *flag.FlagSet, args []string) (Config, error) {
	var c Config
	fs.StringVar(&c.Listen, "listen", getenv("SECKILL_BACKEND_LISTEN", "127.0.0.1:8081"), "address of the order and admin API")
	fs.StringVar(&c.PGURL, "pg", getenv("SECKILL_PG_URL", "postgres://seckill:seckill@127.0.0.1:15432/seckill?sslmode=disable"), "Postgres URL")
	fs.StringVar(&c.RedisAddr, "redis", getenv("SECKILL_REDIS_ADDR", "127.0.0.1:16379"), "Redis host:port")
	fs.StringVar(&c.AMQPURL, "amqp", getenv("SECKILL_AMQP_URL", "amqp://guest:guest@127.0.0.1:16672/"), "RabbitMQ URL")
	batchWait, err := time.ParseDuration(getenv("SECKILL_BATCH_WAIT", "20ms"))
	if err != nil {
		return c, err
	}
	fs.DurationVar(&c.BatchWait, "batch-wait", batchWait, "longest wait before a partial batch is written")
	fs.IntVar(&c.BatchSize, "batch-size", 500, "orders per database transaction")
	fs.BoolVar(&c.Baselines, "baselines", os.Getenv("SECKILL_BASELINES") == "1", "serve the naive benchmark baselines")
	c.AdminToken = os.Getenv("SECKILL_ADMIN_TOKEN")
	return c, fs.Parse(args)
}
