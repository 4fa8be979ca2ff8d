#!/bin/bash
set -e
cat > /app/topwords.sh <<'EOF'
#!/bin/bash
tr -cs '[:alpha:]' '\n' < "$1" | tr '[:upper:]' '[:lower:]' | grep . | sort | uniq -c \
  | sort -k1,1nr -k2,2 | head -n 2 | awk '{print $1, $2}'
EOF
chmod +x /app/topwords.sh
