#!/usr/bin/env bash
# The Debian packages make test's client tests need: kcat (librdkafka),
# kafka-python and confluent-kafka (librdkafka) for Debian's python3, with
# python3-cryptography to read a PKCS#12 trust store, Node.js with npm
# (KafkaJS), and a JDK for keytool, which checks the PKCS#12 stores the
# operator writes (no Java client is built or run), promtool (Debian's
# prometheus) for the chart's alert rules, and Burrow with the ZooKeeper it
# coordinates through, to read __consumer_offsets. Installs the missing
# ones with apt-get when run as root; otherwise names them and the command
# to run, and fails at once rather than twenty minutes into the tests.
set -euo pipefail

missing=()
command -v kcat >/dev/null || missing+=(kcat)
command -v keytool >/dev/null || missing+=(default-jdk-headless)
command -v promtool >/dev/null || missing+=(prometheus)
command -v Burrow >/dev/null || missing+=(burrow)
[ -f /usr/share/java/zookeeper.jar ] || missing+=(zookeeper)
/usr/bin/python3 -c 'import cryptography.hazmat.primitives.serialization.pkcs12' 2>/dev/null || missing+=(python3-cryptography)
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
