# fish completion for mq-peek. Installed where fish looks (vendor_completions.d, or
# /etc/fish/completions under /usr/local) and loaded when mq-peek is first completed.
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

# __mq_columns: prints the column names of --columns, each after the names
# already typed before the last comma of the current word.
function __mq_columns
    set -l cur (string replace -r -- '^--columns=' '' (commandline -ct))
    set -l prefix (string match -r -- '^.*,' $cur)
    set -q prefix[1]; or set prefix ''
    for c in '*' status priority queuing_order conversation_group_id conversation_handle message_sequence_number service_name service_contract_name message_type_name validation message_body message_id message_enqueue_time lookup_id delivery_count queue label abort_count last_failure last_exit_status last_signal last_stderr last_failure_time
        echo $prefix$c
    end
end

function __mq_read_needs_queue
    not __mq_exec_seen
    and test (__mq_operands s store n count top lookup-id id correlation cursor format template lease conversation group columns into retry-delay) -eq 0
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

complete -c mq-peek -f
complete -c mq-peek -n __mq_read_needs_queue -a '(__mq_queues)' -d queue
complete -c mq-peek -s h -l help -d 'Print help and exit'
complete -c mq-peek -l version -d 'Print version and exit'
complete -c mq-peek -s s -l store -x -a '(__fish_complete_directories (commandline -ct))' -d 'Store directory'
complete -c mq-peek -s n -l count -x -d 'Take up to N messages (default 1)'
complete -c mq-peek -l all -d 'Take every qualifying message'
complete -c mq-peek -l top -x -d 'Service Broker TOP(N): at most N messages'
complete -c mq-peek -l first -d 'From the first message of the queue (with --cursor: move the cursor to it)'
complete -c mq-peek -l last -d 'From the last message, backwards'
complete -c mq-peek -l lookup-id -x -d 'Start at the message with this lookup id'
complete -c mq-peek -l next -d 'The messages after --lookup-id (with --cursor: advance the cursor)'
complete -c mq-peek -l prev -d 'The messages before --lookup-id, backwards'
complete -c mq-peek -l id -x -d 'The message with this id'
complete -c mq-peek -l correlation -x -d 'Messages with this correlation id'
complete -c mq-peek -l cursor -x -a '(__mq_cursor_names)' -d 'Use this named cursor, kept in the store, with --first, --current or --next'
complete -c mq-peek -l current -d 'With --cursor: the message at the cursor'
complete -c mq-peek -l no-wait-lock -d 'Fail (exit 5) instead of waiting when another process is using the cursor'
complete -c mq-peek -l locked -d 'Also show messages Locked by an open transactional receive (AllowPeekWhenLocked)'
complete -c mq-peek -s w -l wait -d 'Wait for a qualifying message, up to DURATION (default: infinite)'
complete -c mq-peek -s t -l timeout -d 'The same as --wait'
complete -c mq-peek -l json -d 'One JSON object per message'
complete -c mq-peek -l format -x -a 'json tsv csv' -d 'Output format'
complete -c mq-peek -l columns -x -a '(__mq_columns)' -d 'Print these Service Broker columns, comma-separated (*: all)'
complete -c mq-peek -l header -d 'With tsv or csv rows: a first line of column names'
complete -c mq-peek -l into -r -a '(__fish_complete_path (commandline -ct))' -d 'Append the output to FILE, locked, whole and fsynced'
complete -c mq-peek -l template -x -d 'Print each message through {field} placeholders'
complete -c mq-peek -s l -l lines -d 'End each raw body with a newline'
complete -c mq-peek -s 0 -l null -d 'End each raw body with a NUL byte'
