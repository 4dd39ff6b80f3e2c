# syntax=docker/dockerfile:1
# kueue-guard: a static binary on a distroless, non-root base. `make docker-build`.

ARG GO_VERSION=1.26.8

# Build on the build machine's platform and cross-compile: no emulation needed
# for multi-platform images (docker buildx --platform linux/amd64,linux/arm64).
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
ARG COMMIT=unknown
# CGO off: a static binary that needs no libc in the runtime image.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
    -o /out/kueue-guard ./cmd/webhook

# No shell, no package manager; runs as UID/GID 65532 (the chart's
# podSecurityContext) with a read-only root filesystem.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/kueue-guard /kueue-guard
USER 65532:65532
EXPOSE 9443 8080 8081
ENTRYPOINT ["/kueue-guard"]
CMD ["serve"]
