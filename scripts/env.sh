# shellcheck shell=bash
# Source this file (". scripts/env.sh") to export the PGCDC_TEST_* variables that the tests
# and demos read: addresses of the local services started by scripts/services.sh.
eval "$("$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/services.sh" env)"
