# The gateway image: Caddy's builder pattern, with our module from this checkout.
FROM caddy:2.11.9-builder AS builder
WORKDIR /src
COPY . .
RUN xcaddy build v2.11.9 \
    --with github.com/seckilledge/seckill@v0.0.0-00010101000000-000000000000=/src

FROM caddy:2.11.9
COPY --from=builder /usr/bin/caddy /usr/bin/caddy
COPY Caddyfile /etc/caddy/Caddyfile
# Not root: the gateway listens on ports above 1024 (:8080, the metrics site :2020, the admin
# endpoint 127.0.0.1:2019), so it needs no capability at all. Caddy writes only under /config
# and /data (XDG_CONFIG_HOME, XDG_DATA_HOME in the base image), which the user owns; the Helm
# chart mounts emptyDirs there and keeps the root file system read-only.
RUN addgroup -S -g 65532 seckill && adduser -S -D -H -u 65532 -G seckill seckill \
    && chown -R 65532:65532 /config /data
USER 65532:65532
