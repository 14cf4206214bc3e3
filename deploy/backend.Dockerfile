FROM golang:1.26-bookworm AS builder
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/seckill-backend ./cmd/seckill-backend

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl && rm -rf /var/lib/apt/lists/*
COPY --from=builder /out/seckill-backend /usr/local/bin/seckill-backend
# Not root, by number so Kubernetes can check runAsNonRoot (65534 is nobody).
USER 65534:65534
ENTRYPOINT ["/usr/local/bin/seckill-backend"]
