# shellcheck shell=bash
# Sourced by rebuild.sh and persist.sh: the folder in W each stage of the chain trains.
# shellcheck disable=SC2034  # read by the scripts that source this
STAGE_FOLDERS=([1]=init-k256-drill [2]=lds [3]=lds300 [4]=hls [5]=realtext/round
               [6]=matched-wide/round)
