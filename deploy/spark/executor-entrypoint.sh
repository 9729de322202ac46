#!/bin/sh
# The entrypoint of lagbot-spark-executor: what Spark on Kubernetes starts each executor pod of the drain with.
# Spark's driver (the Spark Connect server) creates the pod with the argument `executor` and says everything in the
# environment: the driver's address, this executor's id, cores, memory, application and resource profile, the pod's
# address and name, and the Spark settings the executor must start with (SPARK_JAVA_OPT_0, _1, ...).
# Anything else is run as given (a shell for debugging, say).
set -eu
if [ "${1:-}" != "executor" ]; then
  exec "$@"
fi
# spark-class sizes the heap of a class it has no role for from SPARK_DRIVER_MEMORY, and passes it no options
# variable: the settings go through JAVA_TOOL_OPTIONS, which every JVM reads.
export SPARK_DRIVER_MEMORY="${SPARK_EXECUTOR_MEMORY}"
JAVA_TOOL_OPTIONS="$(env | sed -n 's/^SPARK_JAVA_OPT_[0-9]*=//p' | tr '\n' ' ')"
export JAVA_TOOL_OPTIONS
if [ -n "${SPARK_EXECUTOR_DIRS:-}" ]; then
  export SPARK_LOCAL_DIRS="${SPARK_EXECUTOR_DIRS}"
fi
exec spark-class org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
  --driver-url "${SPARK_DRIVER_URL}" \
  --executor-id "${SPARK_EXECUTOR_ID}" \
  --cores "${SPARK_EXECUTOR_CORES}" \
  --app-id "${SPARK_APPLICATION_ID}" \
  --hostname "${SPARK_EXECUTOR_POD_IP}" \
  --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID}" \
  --podName "${SPARK_EXECUTOR_POD_NAME}"
