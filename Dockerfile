# For those with Docker: `docker build --target broker -t raftka/broker:v0.1.0 .` and
# `--target operator -t raftka/operator:v0.1.0`. Without a Docker daemon, `make image`
# writes the same images as tarballs.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/raftka-broker ./broker/cmd/raftka-broker && \
    CGO_ENABLED=0 go build -trimpath -o /out/manager .

FROM gcr.io/distroless/static:nonroot AS broker
COPY --from=build /out/raftka-broker /raftka-broker
USER 65532:65532
ENTRYPOINT ["/raftka-broker"]

FROM gcr.io/distroless/static:nonroot AS operator
COPY --from=build /out/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
