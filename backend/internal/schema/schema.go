// Package schema holds the backend's Postgres schema (migrations/*.sql) and Migrate, which
// brings a database to it. It sits under every backend package that writes SQL, so that their
// tests can make a database of their own without the rest of the backend.
package schema

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrate brings the database at url to the newest schema. It is safe to run from several
// backend instances at once: tern takes a Postgres advisory lock around the migration.
//
// tern (by pgx's author) was chosen over golang-migrate and goose because it speaks pgx v5
// natively (no database/sql layer), reads migrations from an embed.FS, and does nothing else.
func Migrate(ctx context.Context, url string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close(context.Background())
	m, err := migrate.NewMigrator(ctx, conn, "schema_version")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	if err := m.LoadMigrations(sub); err != nil {
		return fmt.Errorf("migrate: load: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// Digest is a hex digest of the migrations (names and contents): the key of the tests'
// template database (testenv.PostgresFrom), so a changed or added migration is a new template.
func Digest() string {
	h := sha256.New()
	entries, _ := migrationFiles.ReadDir("migrations")
	for _, e := range entries {
		b, _ := migrationFiles.ReadFile("migrations/" + e.Name())
		fmt.Fprintf(h, "%s %d\n", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
