#!/usr/bin/env bash
# Builds the Java Kafka client (kafka-clients) from source into bin/java, for the
# integration test that runs it against our brokers. Maven Central cannot be reached
# from our build machines; the Go module proxy serves the Kafka source tree as the
# module github.com/apache/kafka at one version, v7.4.1+incompatible: Confluent's
# 7.4.1 tree, whose clients are those of Apache Kafka 3.4.
#
# As Kafka's Gradle build does: compile the message generator, generate the
# protocol message classes from their JSON schemas, compile the clients. The
# libraries they need come from Debian (see .ci/run). Left out: the OAuth bearer
# JWT validation classes, which need jose4j (not in Debian) and only matter
# for SASL/OAUTHBEARER, which our brokers do not offer.
#
# Usage: hack/java-kafka-client.sh   prints the client's class path (builds it if missing)
set -euo pipefail

KAFKA_MODULE_VERSION=v7.4.1+incompatible
KAFKA_MODULE_SUM=h1:/pmN8bIMUkLf8rJlA1h7xRo+JdUEs8iZnJXV6K+gEV8=
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/bin/java
jar=$out/kafka-clients-${KAFKA_MODULE_VERSION%%+*}.jar
deb=/usr/share/java
runtime=(zstd-jni lz4-java snappy-java slf4j-api slf4j-simple)
compile=(jackson-databind jackson-core jackson-annotations netty-buffer netty-common netty-handler netty-transport netty-codec)
generator=(jackson-databind jackson-core jackson-annotations argparse4j)

classpath() {
  local IFS=: paths=()
  for name in "$@"; do paths+=("$deb/$name.jar"); done
  echo "${paths[*]}"
}

for name in "${runtime[@]}" "${compile[@]}" "${generator[@]}"; do
  if [[ ! -f $deb/$name.jar ]]; then
    echo "java-kafka-client: $deb/$name.jar is missing; install Debian's default-jdk-headless libzstd-jni-java liblz4-java libsnappy-java libslf4j-java libjackson2-databind-java libnetty-java libargparse4j-java (.ci/run does)" >&2
    exit 1
  fi
done

if [[ ! -f $jar ]]; then
  echo "java-kafka-client: building kafka-clients from github.com/apache/kafka@$KAFKA_MODULE_VERSION into $jar" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && GOFLAGS=-mod=mod go mod download -json "github.com/apache/kafka@$KAFKA_MODULE_VERSION") >"$work/module.json"
  field() { sed -n "s/^\t\"$1\": \"\(.*\)\",\?$/\1/p" "$work/module.json"; }
  src=$(field Dir)
  if [[ $(field Sum) != "$KAFKA_MODULE_SUM" || ! -d $src/clients ]]; then
    echo "java-kafka-client: the module proxy did not give the pinned Kafka source:" >&2
    cat "$work/module.json" >&2
    exit 1
  fi
  mkdir -p "$work/generator" "$work/generated" "$work/classes/kafka"

  find "$src/generator/src/main/java" -name '*.java' >"$work/generator.srcs"
  javac -nowarn -d "$work/generator" -cp "$(classpath "${generator[@]}")" @"$work/generator.srcs"
  java -cp "$work/generator:$(classpath "${generator[@]}")" org.apache.kafka.message.MessageGenerator \
    -p org.apache.kafka.common.message -o "$work/generated/org/apache/kafka/common/message" \
    -i "$src/clients/src/main/resources/common/message" \
    -t ApiMessageTypeGenerator -m MessageDataGenerator JsonConverterGenerator >&2

  find "$src/clients/src/main/java" "$src/ce-events-api/src/main/java" "$work/generated" -name '*.java' |
    grep -v -E 'oauthbearer/internals/secured/|OAuthBearer(Login|Validator)CallbackHandler\.java' >"$work/clients.srcs"
  javac -nowarn -J-Xmx2g -d "$work/classes" -cp "$(classpath "${runtime[@]}" "${compile[@]}")" @"$work/clients.srcs"
  printf 'commitId=%s\nversion=%s\n' "$KAFKA_MODULE_VERSION" "${KAFKA_MODULE_VERSION%%+*}" >"$work/classes/kafka/kafka-version.properties"
  mkdir -p "$out"
  jar cf "$jar.tmp" -C "$work/classes" .
  mv "$jar.tmp" "$jar"
fi
echo "$jar:$(classpath "${runtime[@]}")"
