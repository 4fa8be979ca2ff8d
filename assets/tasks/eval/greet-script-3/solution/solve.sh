#!/bin/bash
set -e
cat > /app/greet.sh <<'EOF'
#!/bin/bash
echo "Greetings, $1!"
EOF
chmod +x /app/greet.sh
