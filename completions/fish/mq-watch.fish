# fish completion for mq-watch. Installed where fish looks (vendor_completions.d, or
# /etc/fish/completions under /usr/local) and loaded when mq-watch is first completed.
# Queue names come from `mq-admin list`, run on the store named by -s/--store on the command line,
# else on the default store if it exists (a missing default store is not created
# just to complete a name).

# __mq_store: prints the store named by -s DIR, -sDIR, --store DIR or
# --store=DIR on the command line before the cursor.
function __mq_store
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l store
    while set -q tokens[1]
        switch $tokens[1]
            case --
                break
            case -s --store
                set -e tokens[1]
                set -q tokens[1]; and set store $tokens[1]
            case '--store=*'
                set store (string replace -- --store= '' $tokens[1])
            case '-s?*'
                set store (string sub -s 3 -- $tokens[1])
        end
        set -e tokens[1]
    end
    string replace -r -- '^~' $HOME $store
end

# __mq_admin_query ARGS...: runs `mq-admin ARGS` on that store, else on the
# default store if it exists, with errors silenced.
function __mq_admin_query
    set -l store (__mq_store)
    if test -n "$store"
        mq-admin --store $store $argv 2>/dev/null
        return
    end
    set -l def $HOME/.local/share/mq
    if test -n "$MQ_STORE"
        set def $MQ_STORE
    else if test -n "$XDG_DATA_HOME"
        set def $XDG_DATA_HOME/mq
    end
    test -e $def/data.mdb; and mq-admin $argv 2>/dev/null
end

# __mq_cursor_names: the names of the store's named cursors.
function __mq_cursor_names
    __mq_admin_query cursors | cut -f2 | sort -u
end

# __mq_queues: prints the queue names of that store.
function __mq_queues
    __mq_admin_query list
end

# __mq_operands ARGOPT...: prints how many operands precede the cursor, skipping
# the values of the options ARGOPT (given without their leading dashes, as
# "s" or "store") and the optional DURATION of -w/--wait, so that completions
# can tell a queue from a body.
function __mq_operands
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l n 0
    set -l ended 0
    while set -q tokens[1]
        set -l t $tokens[1]
        set -e tokens[1]
        if test $ended = 1
            set n (math $n + 1)
        else if test "$t" = --
            set ended 1
        else if contains -- $t -w --wait -t --timeout
            # An optional DURATION: the next word, if it is one.
            string match -qr -- '^([0-9].*|\.[0-9].*|infinite|INFINITE|-1)$' "$tokens[1]"
            and set -e tokens[1]
        else if string match -q -- '--*=*' $t
            continue
        else if string match -q -- '--*' $t
            contains -- (string sub -s 3 -- $t) $argv; and set -e tokens[1]
        else if string match -qr -- '^-.$' $t
            contains -- (string sub -s 2 -- $t) $argv; and set -e tokens[1]
        else if string match -q -- '-?*' $t
            continue
        else
            set n (math $n + 1)
        end
    end
    echo $n
end

function __mq_watch_needs_queue
    not __mq_exec_seen
    and test (__mq_operands s store cursor cursor-name format max-readers retry-delay) -eq 0
end

# __mq_exec_seen: true if --exec stands before the cursor: the words after it
# are a command and its arguments.
function __mq_exec_seen
    contains -- --exec (commandline -opc)
end

# __mq_exec_complete: completes the command line that follows --exec, as fish
# would complete it on its own.
function __mq_exec_complete
    set -l tokens (commandline -opc)
    set -l i (contains -i -- --exec $tokens)
    set -l rest
    if test $i -lt (count $tokens)
        set rest (string escape -- $tokens[(math $i + 1)..-1])
    end
    complete -C (string join -- ' ' $rest (commandline -ct))
end

complete -c mq-watch -f
complete -c mq-watch -n __mq_watch_needs_queue -a '(__mq_queues)' -d queue
complete -c mq-watch -n 'not __mq_exec_seen' -s h -l help -d 'Print help and exit'
complete -c mq-watch -n 'not __mq_exec_seen' -l version -d 'Print version and exit'
complete -c mq-watch -n 'not __mq_exec_seen' -s s -l store -x -a '(__fish_complete_directories (commandline -ct))' -d 'Store directory'
complete -c mq-watch -n 'not __mq_exec_seen' -l cursor -x -a '(__mq_cursor_names) first current next' -d 'A persistent named cursor (with --first, --current or --next)'
complete -c mq-watch -n 'not __mq_exec_seen' -l first -d 'With --cursor: move the cursor to the head'
complete -c mq-watch -n 'not __mq_exec_seen' -l current -d 'With --cursor: the message at the cursor'
complete -c mq-watch -n 'not __mq_exec_seen' -l next -d 'With --cursor: advance the cursor first'
complete -c mq-watch -n 'not __mq_exec_seen' -l cursor-name -x -a '(__mq_cursor_names)' -d 'Deprecated: the cursor of --cursor first|current|next'
complete -c mq-watch -n 'not __mq_exec_seen' -s w -l wait -d 'How long to wait for an event (default infinite)'
complete -c mq-watch -n 'not __mq_exec_seen' -s t -l timeout -d 'The same as --wait'
complete -c mq-watch -n 'not __mq_exec_seen' -l json -d 'Print each event as a JSON object'
complete -c mq-watch -n 'not __mq_exec_seen' -l format -x -a 'text json' -d 'Event format'
complete -c mq-watch -n 'not __mq_exec_seen' -l locked -d 'Also report Locked messages (AllowPeekWhenLocked)'
complete -c mq-watch -n 'not __mq_exec_seen' -l follow -d 'Keep watching: one event per message until a signal'
complete -c mq-watch -n 'not __mq_exec_seen' -l until-empty -d 'Wait until the queue holds no message; exit 1 after --wait'
complete -c mq-watch -n 'not __mq_exec_seen' -l no-wait-lock -d 'Fail (exit 5) instead of waiting when another process uses the cursor'
complete -c mq-watch -n 'not __mq_exec_seen' -l exec -d 'Activator: receive each message with CMD [ARG...] (the rest of the line)'
complete -c mq-watch -n 'not __mq_exec_seen' -l max-readers -x -d 'With --exec: up to N receivers at once (default 1)'
complete -c mq-watch -n 'not __mq_exec_seen' -l retry-delay -x -a '0 1s 5s 1m' -d 'With --exec: a failed message waits DURATION before it is tried again (default 1s)'
complete -c mq-watch -n __mq_exec_seen -a '(__mq_exec_complete)'
