#!/usr/bin/env bash
# The Debian packages make test's client tests need: kcat (librdkafka),
# kafka-python and confluent-kafka (for Debian's python3), Node.js with npm (KafkaJS), and a JDK
# with the libraries the Java Kafka client is built and run with
# (hack/java-kafka-client.sh). Installs the missing ones with apt-get when
# run as root; otherwise names them and the command to run, and fails at
# once rather than twenty minutes into the tests.
set -euo pipefail

missing=()
command -v kcat >/dev/null || missing+=(kcat)
command -v javac >/dev/null || missing+=(default-jdk-headless)
for jar in zstd-jni:libzstd-jni-java lz4-java:liblz4-java snappy-java:libsnappy-java slf4j-simple:libslf4j-java \
  jackson-databind:libjackson2-databind-java netty-handler:libnetty-java argparse4j:libargparse4j-java; do
  [ -f "/usr/share/java/${jar%%:*}.jar" ] || missing+=("${jar#*:}")
done
/usr/bin/python3 -c 'import kafka' 2>/dev/null || missing+=(python3-kafka)
/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null || missing+=(python3-confluent-kafka)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "make test needs Debian packages ${missing[*]}: run 'sudo $0' once (or apt-get install them), then make test again" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null
