# httptools serve in a container: a static binary (pure Go, no cgo: SQLite
# is modernc.org/sqlite) on a distroless base, running as a non-root user.
# CI does not build this image (the machine has no Docker daemon).
#
#   docker build -t httptools .
#   docker run -p 8080:8080 -v "$PWD/fixtures/tools:/tools:ro" -v httptools-data:/data httptools
#
# Every serve flag is also an HTTPTOOLS_* variable (HTTPTOOLS_DB,
# HTTPTOOLS_PUBLIC_URL, HTTPTOOLS_APPS, …); docs/deploy/ runs several
# replicas on PostgreSQL behind a load balancer.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/httptools ./cmd/httptools

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/httptools /httptools
# /data holds the SQLite store and its master key file (mount a volume);
# on PostgreSQL set HTTPTOOLS_DB=postgres://… and HTTPTOOLS_MASTER_KEY.
ENV HTTPTOOLS_ADDR=0.0.0.0:8080 \
    HTTPTOOLS_TOOLS=/tools \
    HTTPTOOLS_DB=sqlite:/data/httptools.db \
    HTTPTOOLS_LOG_FORMAT=json
VOLUME ["/data"]
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/httptools"]
CMD ["serve"]
