# fish completion for mq-send. Installed where fish looks (vendor_completions.d, or
# /etc/fish/completions under /usr/local) and loaded when mq-send is first completed.
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
        else if contains -- $t -w --wait
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

# A reply (--reply-to, --reply-to-env) goes to the request's response queue:
# its only operand is the body.
function __mq_send_needs_queue
    set -l tokens (commandline -opc)
    for t in $tokens
        string match -qr -- '^--reply-to(=.*|-env)?$' $t; and return 1
    end
    test (__mq_operands s store f file p priority L label c correlation app body-type ttrq ttbr admin-queue ack response-queue delay at dedup reply-to conversation group message-type service contract hash-algorithm provider-type provider-name extension) -eq 0
end

# __mq_send_extension: --extension takes hex digits or @FILE: files after an @.
function __mq_send_extension
    set -l cur (commandline -ct)
    string match -q -- '@*' $cur; or return
    for f in (__fish_complete_path (string sub -s 2 -- $cur))
        echo @$f
    end
end

complete -c mq-send -f
# a,b,c: a copy in each queue; the name after the last comma is completed.
function __mq_send_queue_list
    set -l cur (commandline -ct)
    set -l head (string replace -r '[^,]*$' '' -- $cur)
    for q in (__mq_queues)
        printf '%s%s\n' $head $q
    end
end
complete -c mq-send -n __mq_send_needs_queue -a '(__mq_send_queue_list)' -d queue
complete -c mq-send -s h -l help -d 'Print help and exit'
complete -c mq-send -l version -d 'Print version and exit'
complete -c mq-send -s s -l store -x -a '(__fish_complete_directories (commandline -ct))' -d 'Store directory'
complete -c mq-send -l create -d 'Create the queue (and a named store) if missing'
complete -c mq-send -s f -l file -r -F -d 'Read the body from FILE'
complete -c mq-send -s l -l lines -d 'Send each line of stdin as a message'
complete -c mq-send -s 0 -l null -d 'Send each NUL-terminated record of stdin'
complete -c mq-send -s p -l priority -x -a '0 1 2 3 4 5 6 7' -d 'Priority, higher first (default 3)'
complete -c mq-send -s L -l label -x -d 'Label, at most 250 characters'
complete -c mq-send -s c -l correlation -x -d 'Correlation id: 40 hex digits or a message id'
complete -c mq-send -l app -x -d 'Application-specific 32-bit number'
complete -c mq-send -l body-type -x -a 'bytes text json xml empty' -d 'Body type'
complete -c mq-send -l ttrq -x -a infinite -d 'Time to reach the queue'
complete -c mq-send -l ttbr -x -a infinite -d 'Time to be received'
complete -c mq-send -l journal -d 'Ask for source journaling'
complete -c mq-send -l deadletter -d 'Ask for dead-lettering'
complete -c mq-send -l admin-queue -x -a '(__mq_queues)' -d 'Queue for acknowledgements'
complete -c mq-send -l ack -x -a 'none full-reach-queue full-receive nack-reach-queue nack-receive pos-arrival pos-receive neg-arrival neg-receive' -d 'Acknowledgement level'
complete -c mq-send -l response-queue -x -a '(__mq_queues)' -d 'Queue for replies'
complete -c mq-send -l express -d 'One disk sync per commit, not two'
complete -c mq-send -l hash-algorithm -x -a 'md2 md4 md5 sha1 mac sha256 sha384 sha512' -d 'Hash algorithm for authentication'
complete -c mq-send -l provider-type -x -a 'rsa-full rsa-sig dss fortezza ms-exchange ssl rsa-schannel dss-dh dh-schannel rsa-aes' -d 'Cryptographic provider type'
complete -c mq-send -l provider-name -x -d 'Cryptographic provider name'
complete -c mq-send -l extension -x -a '(__mq_send_extension)' -d 'Extension bytes: hex digits or @FILE'
complete -c mq-send -l delay -x -d 'Not visible to readers before DURATION'
complete -c mq-send -l at -x -d 'Not visible to readers before TIME (RFC 3339 or @EPOCH)'
complete -c mq-send -l tx -d 'One transaction for everything this invocation sends'
complete -c mq-send -l dedup -x -d "A second send with KEY within the queue's dedup window is dropped"
complete -c mq-send -l print-id -d 'Print the id of each message sent'
complete -c mq-send -l reply-to -x -d 'Reply to request MSGID: send to its response queue'
complete -c mq-send -l reply-to-env -d 'Reply to the request of MQ_ID and MQ_RESPONSE_QUEUE (inside --exec)'
complete -c mq-send -l conversation -x -a new -d "Send on conversation HANDLE; 'new' begins one"
complete -c mq-send -l group -x -d 'Conversation group of the conversation'
complete -c mq-send -l message-type -x -a '(mq-admin message-type list 2>/dev/null | cut -f1)' -d 'Service Broker message type'
complete -c mq-send -l service -x -d 'Service name of a new conversation'
complete -c mq-send -l contract -x -d 'Contract name of a new conversation'
