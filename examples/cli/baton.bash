# bash completion for baton(1): commands, actions and each command's options.
# Installed as share/bash-completion/completions/baton; to try it: source examples/cli/baton.bash

_baton() {
    local cur prev words cword
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cword=$COMP_CWORD
    local aws="--endpoint --region --profile --path-style --virtual-hosted"
    if [[ $cword -eq 1 ]]; then
        COMPREPLY=($(compgen -W "run status watch probe kv table --help --version" -- "$cur"))
        return
    fi
    local cmd=${COMP_WORDS[1]} action=${COMP_WORDS[2]}
    # After `--`, the words belong to the command baton runs.
    local i
    for ((i = 2; i < cword; i++)); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
            COMPREPLY=($(compgen -c -- "$cur"))
            return
        fi
    done
    case $prev in
        --store)
            COMPREPLY=($(compgen -W "file:/// s3:// dynamodb:// azblob://" -- "$cur"))
            compopt -o nospace 2>/dev/null
            return ;;
        --log-format)
            COMPREPLY=($(compgen -W "text json" -- "$cur"))
            return ;;
        --metrics-file|--log)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --key|--ttl|--wait|--owner|--grace|--interval|--value|--if-version|--fence|--worker|--records|--step|--max-commands|--endpoint|--region|--profile)
            return ;;
    esac
    local opts
    case $cmd in
        run) opts="--store --key --ttl --wait --no-wait --owner --grace --wall-clock-tokens --metrics-file --verbose --log-format --help $aws" ;;
        status) opts="--store --key --json --help $aws" ;;
        watch) opts="--store --key --json --interval --log-format --help $aws" ;;
        probe) opts="--store --json --policy --help $aws" ;;
        kv)
            if [[ $cword -eq 2 ]]; then
                COMPREPLY=($(compgen -W "get put rm list --help" -- "$cur"))
                return
            fi
            opts="--store --json --help $aws"
            case $action in
                put) opts="$opts --value --if-version --if-absent --fence" ;;
                rm) opts="$opts --if-version --fence" ;;
            esac ;;
        table)
            if [[ $cword -eq 2 ]]; then
                COMPREPLY=($(compgen -W "register retire status work --help" -- "$cur"))
                return
            fi
            opts="--store --help $aws"
            case $action in
                status) opts="$opts --json" ;;
                work) opts="$opts --worker --ttl --grace --max-commands --records --step --log --log-format --metrics-file --" ;;
            esac ;;
        *) return ;;
    esac
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _baton baton
