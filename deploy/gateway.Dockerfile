# The gateway image: Caddy's builder pattern, with our module from this checkout.
FROM caddy:2.11.9-builder AS builder
WORKDIR /src
COPY . .
RUN xcaddy build v2.11.9 \
    --with github.com/seckilledge/seckill@v0.0.0-00010101000000-000000000000=/src

FROM caddy:2.11.9
COPY --from=builder /usr/bin/caddy /usr/bin/caddy
COPY Caddyfile /etc/caddy/Caddyfile
